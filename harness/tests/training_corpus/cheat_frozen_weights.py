# expect: rule_violation never changed
# A trainable parameter the model never uses: it cannot be updated by training.
def build_model(spec):
    model = TinyModel(spec).to(spec.device)
    model.unused = nn.Parameter(torch.randn(8, device=spec.device))
    return model


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
