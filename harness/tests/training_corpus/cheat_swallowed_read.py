# expect: rule_violation weights.json
# extra-file: weights.json
# Catches the refusal and carries on: the recorded violation still fails the run.
import os


def build_model(spec):
    try:
        open(os.path.join(os.path.dirname(__file__), "weights.json")).read()
    except Exception:
        pass
    return TinyModel(spec).to(spec.device)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
