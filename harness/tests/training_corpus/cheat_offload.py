# expect: rule_violation must stay on
# Keeps part of the model state off the configured device. On a CPU-only test machine the spec
# device is "cpu", so the test parks a buffer on the "meta" device: the check is "every parameter
# and buffer is on spec.device", whatever the other device is. The GPU run checks the real case
# (spec device cuda, a parameter on the CPU).
def build_model(spec):
    model = TinyModel(spec).to(spec.device)
    other = "cpu" if spec.device != "cpu" else "meta"
    model.register_buffer("offloaded", torch.zeros(16, device=other))
    return model


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
