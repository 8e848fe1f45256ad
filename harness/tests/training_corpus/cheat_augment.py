# expect: rule_violation in place
# Rewrites the evaluator's batch in place (data augmentation).
class Augmenting(TinyModel):
    def forward(self, ids):
        if self.training:
            ids.copy_(ids.flip(0))
        return super().forward(ids)


SUBMISSION = Submission(build_model=lambda spec: Augmenting(spec).to(spec.device), build_optimizer=build_optimizer,
                        batch_size=BATCH)
