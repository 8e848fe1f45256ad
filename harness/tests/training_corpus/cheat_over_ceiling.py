# expect: rule_violation ceiling
# spec: {"maxModelStateElements": 100000}
def build_model(spec):
    model = TinyModel(spec).to(spec.device)
    model.register_buffer("table", torch.zeros(200_000))  # persistent buffers count too
    return model


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
