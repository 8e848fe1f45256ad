# expect: rule_violation backward()
# The intermediate callback runs an extra backward pass of its own.
def intermediate(ctx):
    extra = sum((p ** 2).sum() for p in ctx.model.parameters())
    extra.backward()


def build_optimizer(model, spec):
    return OptimizerBundle(torch.optim.Adam(model.parameters(), lr=3e-3), intermediate_callback=intermediate)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
