# expect: memory_limit out of memory
# Runs out of memory in its first training step. On a GPU it fills the device, 2 GiB at a time,
# until CUDA refuses (torch.cuda.OutOfMemoryError): the run's end must give all of it back, and
# gpu-smoke's next run on the same slot must succeed. On a CPU (this corpus's tests) it asks for
# 16 TiB at once, which the allocator refuses, instead of filling the machine's memory.
class FillsMemory(TinyModel):
    def forward(self, ids):
        if ids.is_cuda:
            held = []
            for _ in range(4096):  # at most 8 TiB: always past the device's memory
                held.append(torch.empty(2 << 30, dtype=torch.uint8, device=ids.device))
        else:
            torch.empty(1 << 44, dtype=torch.uint8, device=ids.device)
        return super().forward(ids)


def build_model(spec):
    return FillsMemory(spec).to(spec.device)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
