# expect: timeout final evaluation
class SlowEval(TinyModel):
    def forward(self, ids):
        if not self.training:
            time.sleep(600)
        return super().forward(ids)


SUBMISSION = Submission(build_model=lambda spec: SlowEval(spec).to(spec.device), build_optimizer=build_optimizer,
                        batch_size=BATCH)
