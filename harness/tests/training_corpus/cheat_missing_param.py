# expect: rule_violation not in the optimizer
def build_optimizer(model, spec):
    params = [p for n, p in model.named_parameters() if n != "head.bias"]
    return OptimizerBundle(torch.optim.Adam(params, lr=3e-3))


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
