# expect: rule_violation model was called
# The "read-only" reuse callback runs the model.
holder = {}


def reuse(ctx):
    holder["model"](torch.zeros(2, holder["L"], dtype=torch.long))
    return True


def build_model(spec):
    holder["L"] = spec.sequence_length
    holder["model"] = TinyModel(spec).to(spec.device)
    return holder["model"]


def build_optimizer(model, spec):
    return OptimizerBundle(torch.optim.Adam(model.parameters(), lr=3e-3), max_batch_reuse=2, reuse_callback=reuse)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
