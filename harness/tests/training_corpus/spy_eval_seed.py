# expect: succeeded
# Looks everywhere in its own process for the hidden evaluation seed (the test sets an unusual
# value); prints LEAK if it finds it. The test asserts the line never appears.
import gc
import sys

SECRET = int("9876" + "54321")  # built at run time: no literal in this file's code constants


def build_model(spec):
    found = False
    mine = globals()
    for obj in gc.get_objects():
        if obj is mine:
            continue  # SECRET itself lives here
        try:
            if isinstance(obj, dict):
                if "evalSeed" in obj or SECRET in obj.values():
                    found = True
            elif isinstance(obj, (list, tuple)) and SECRET in obj:
                found = True
        except Exception:
            pass
    if str(SECRET) in " ".join(sys.argv):
        found = True
    print("LEAK" if found else "no eval seed in the child", flush=True)
    return TinyModel(spec).to(spec.device)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
