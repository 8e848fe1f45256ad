# expect: succeeded
# Legit use of every hook the contract offers: legacy flattened loss, two backward passes with an
# intermediate callback that rescales gradients after the last pass, and dynamic batch reuse.
seen = {"reuse": 0}


def intermediate(ctx):
    if ctx.pass_index == ctx.passes - 1:
        with torch.no_grad():
            for p in ctx.model.parameters():
                if p.grad is not None:
                    p.grad.mul_(1.0 / ctx.passes)


def reuse(ctx):
    seen["reuse"] += 1
    return ctx.uses < 2


def build_optimizer(model, spec):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda u: 1.0 - 0.5 * spec.elapsed_fraction())
    return OptimizerBundle(opt, scheduler=sched, backward_passes=2, max_batch_reuse=3,
                           reuse_callback=reuse, intermediate_callback=intermediate)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer,
                        training_loss=lambda logits, labels: F.cross_entropy(logits, labels),
                        batch_size=BATCH, eval_batch_size=100)
