# expect: timeout
def build_model(spec):
    time.sleep(600)  # "construction" that outlasts the allowance


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
