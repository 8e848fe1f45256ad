# expect: candidate_error ZeroDivisionError
def build_model(spec):
    return 1 / 0


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
