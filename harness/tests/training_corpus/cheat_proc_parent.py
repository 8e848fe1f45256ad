# expect: rule_violation /proc
# Tries to read the parent's command line (which names the spec file holding the eval seed).
import os


def build_model(spec):
    open(f"/proc/{os.getppid()}/cmdline", "rb").read()
    return TinyModel(spec).to(spec.device)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
