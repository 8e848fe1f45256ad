"""Baseline engine for qwen3-4b-decode (scores 100 by definition).

Transformers' AutoModelForCausalLM in BF16 on one GPU, a plain greedy loop with a DynamicCache:
prefill the prompt once, then one forward per new token. Correct and simple, and slow because
every step launches hundreds of small kernels from Python. Keep the two methods' signatures;
change everything else (see examples/fast for a static cache + CUDA graphs version).

Checkpoint: Qwen/Qwen3-4B-Instruct-2507 at the pinned revision below, provided by the platform in
model_path. Never download: the sandbox has no network and the weights are fixed.
"""
import torch
import transformers
from transformers import AutoModelForCausalLM, DynamicCache

MODEL_ID = "Qwen/Qwen3-4B-Instruct-2507"
MODEL_REVISION = "cdbee75f17c01a7cc42f958dc650907174af0554"


class Engine:
    def __init__(self, model_path: str) -> None:
        # `dtype=` replaced `torch_dtype=` in Transformers 4.56; the runtime pins 4.51.3.
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_arg = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, local_files_only=True, **{dtype_arg: torch.bfloat16}
        ).to("cuda").eval()

    @torch.inference_mode()
    def generate(self, input_ids, max_new_tokens):
        ids = torch.tensor(input_ids, dtype=torch.long, device="cuda")
        cache = DynamicCache()
        # logits_to_keep=1: the prefill needs the last position's logits only, not [B, L, vocab]
        out = self.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        for step in range(max_new_tokens):
            next_ids = out.logits[:, -1, :].argmax(dim=-1)
            yield next_ids.tolist()  # one id per sequence; greedy, no stop at end-of-sequence
            if step + 1 < max_new_tokens:
                out = self.model(input_ids=next_ids[:, None], past_key_values=out.past_key_values, use_cache=True)
