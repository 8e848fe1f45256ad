# expect: rule_violation torch.load
import io


def build_model(spec):
    model = TinyModel(spec).to(spec.device)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)  # stands in for weights embedded in submission.py
    buf.seek(0)
    model.load_state_dict(torch.load(buf))
    return model


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
