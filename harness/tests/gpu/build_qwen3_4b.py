"""Build a Qwen3-4B-shaped checkpoint with random BF16 weights (GPU machine only; needs transformers)."""
import sys
import time

import torch
from transformers import AutoModelForCausalLM, Qwen3Config

out = sys.argv[1]
t = time.time()
cfg = Qwen3Config(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                  num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True,
                  max_position_embeddings=40960, rms_norm_eps=1e-6)
torch.manual_seed(0)
with torch.device("cuda"):
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
n = sum(p.numel() for p in model.parameters())
model.save_pretrained(out)
print(f"built {n / 1e9:.3f} B parameters into {out} in {time.time() - t:.1f} s", flush=True)
