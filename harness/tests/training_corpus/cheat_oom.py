# expect: memory_limit
def build_model(spec):
    torch.empty(1 << 44, dtype=torch.uint8, device=spec.device)  # 16 TiB


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
