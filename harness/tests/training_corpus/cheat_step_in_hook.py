# expect: rule_violation optimizer.step()
# A forward hook that steps the optimizer: hidden extra updates.
holder = {}


def build_model(spec):
    model = TinyModel(spec).to(spec.device)

    def hook(module, inputs, output):
        if "opt" in holder:
            holder["opt"].step()

    model.head.register_forward_hook(hook)
    return model


def build_optimizer(model, spec):
    holder["opt"] = torch.optim.Adam(model.parameters(), lr=3e-3)
    return OptimizerBundle(holder["opt"])


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
