# expect: rule_violation weights.json
# extra-file: weights.json
import json
import os


def build_model(spec):
    model = TinyModel(spec).to(spec.device)
    with open(os.path.join(os.path.dirname(__file__), "weights.json")) as fh:
        json.load(fh)
    return model


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
