"""The trusted Qwen3 reference: a plain PyTorch forward pass over an HF-format checkpoint directory
(config.json + model.safetensors or its sharded index), written to the arithmetic of
transformers' Qwen3ForCausalLM (RMSNorm in float32, per-head q/k RMSNorm, rotate-half RoPE with
cos/sin cast to the model dtype, GQA attention with a float32 softmax, SiLU-gated MLP, tied or
separate lm_head).

The parent uses it for one thing: a teacher-forced pass over prompt + the candidate's own tokens,
accepting each token whose logit is within `tolerance` of its row's max. It does not need
Transformers, so the same code is tested on CPU (Debian's torch 1.13) and runs on the GPU.
On CUDA it computes in the checkpoint's dtype (BF16 for Qwen3-4B), on CPU in float32.
"""
from __future__ import annotations

import json
import math
import os
from typing import Optional

import torch
import torch.nn.functional as F

from .safetensors_io import load_checkpoint

# Ids >= 151643 in Qwen3's 151936-row embedding are special or padding rows: prompts are drawn
# from the ordinary text tokens below it.
QWEN3_TEXT_TOKENS = 151643


def read_config(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as fh:
        cfg = json.load(fh)
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    theta = cfg.get("rope_theta", rope.get("rope_theta", 1_000_000.0))
    if rope and rope.get("rope_type", rope.get("type", "default")) not in ("default", None):
        raise ValueError(f"unsupported RoPE scaling {rope!r} in {model_dir}/config.json")
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    return {
        "hidden": hidden, "layers": cfg["num_hidden_layers"], "heads": heads,
        "kv_heads": cfg.get("num_key_value_heads", heads), "head_dim": cfg.get("head_dim") or hidden // heads,
        "ffn": cfg["intermediate_size"], "vocab": cfg["vocab_size"], "eps": cfg.get("rms_norm_eps", 1e-6),
        "theta": float(theta), "tied": bool(cfg.get("tie_word_embeddings", False)),
        "dtype": cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16",
    }


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Qwen3Reference:
    def __init__(self, model_dir: str, device: Optional[str] = None) -> None:
        self.dir = model_dir
        self.cfg = read_config(model_dir)
        self.vocab_size = self.cfg["vocab"]
        self.prompt_vocab = min(self.vocab_size, QWEN3_TEXT_TOKENS)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = getattr(torch, self.cfg["dtype"]) if self.device != "cpu" else torch.float32
        self.w: Optional[dict] = None

    def load(self) -> None:
        if self.w is not None:
            return
        raw = load_checkpoint(self.dir, device="cpu")
        w = {k: v.to(device=self.device, dtype=self.dtype) for k, v in raw.items()}
        del raw
        if "lm_head.weight" not in w or self.cfg["tied"]:
            w["lm_head.weight"] = w["model.embed_tokens.weight"]
        self.w = w

    def close(self) -> None:
        self.w = None
        if self.device != "cpu":
            torch.cuda.empty_cache()

    @torch.no_grad()
    def hidden_states(self, ids: torch.Tensor) -> torch.Tensor:
        """Final-normed hidden states [B, T, H] for token ids [B, T] (causal, positions 0..T-1)."""
        self.load()
        c, w = self.cfg, self.w
        B, T = ids.shape
        Hq, Hkv, D, eps = c["heads"], c["kv_heads"], c["head_dim"], c["eps"]
        x = F.embedding(ids, w["model.embed_tokens.weight"])
        inv_freq = 1.0 / (c["theta"] ** (torch.arange(0, D, 2, dtype=torch.int64, device=self.device).float() / D))
        freqs = torch.arange(T, device=self.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)
        causal = torch.full((T, T), float("-inf"), device=self.device).triu(1)
        scale = D ** -0.5
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        for i in range(c["layers"]):
            p = f"model.layers.{i}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(B, T, Hq, D)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(B, T, Hkv, D)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(B, T, Hkv, D)
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps).transpose(1, 2)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps).transpose(1, 2)
            v = v.transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(Hq // Hkv, dim=1)
            v = v.repeat_interleave(Hq // Hkv, dim=1)
            if sdpa is not None and self.device != "cpu":
                a = sdpa(q, k, v, is_causal=True, scale=scale)
            else:
                s = torch.matmul(q, k.transpose(-1, -2)) * scale + causal.to(q.dtype)
                a = torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)
            a = a.transpose(1, 2).reshape(B, T, Hq * D)
            x = x + F.linear(a, w[p + "self_attn.o_proj.weight"])
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            m = F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"])
            x = x + F.linear(m, w[p + "mlp.down_proj.weight"])
        return rms_norm(x, w["model.norm.weight"], eps)

    @torch.no_grad()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.w["lm_head.weight"]).float()

    @torch.no_grad()
    def greedy(self, prompt: list[int], steps: int) -> list[int]:
        """Plain greedy decoding without a cache (tests only: O(T^2))."""
        ids = list(prompt)
        for _ in range(steps):
            h = self.hidden_states(torch.tensor([ids], device=self.device))
            ids.append(int(self.logits(h[:, -1]).argmax(-1)))
        return ids[len(prompt):]

    @torch.no_grad()
    def verify(self, prompts: list[list[int]], outputs: list[list[int]], tolerance: float) -> Optional[dict]:
        """Teacher-forced check of every candidate token; the first rejected (sequence, step) or None."""
        L, N = len(prompts[0]), len(outputs[0])
        full = torch.tensor([p + o for p, o in zip(prompts, outputs)], device=self.device)
        cand = full[:, L:]
        # Rows of sequences are independent: chunk the batch to bound activation memory.
        rows = max(1, int(2**26 // max(1, (L + N) * self.cfg["ffn"])))
        first: Optional[dict] = None
        self.max_deficit = 0.0  # how far below its row's max the worst accepted token was
        for b0 in range(0, full.shape[0], rows):
            hid = self.hidden_states(full[b0:b0 + rows, :-1])[:, L - 1:]  # positions predicting each candidate token
            for t0 in range(0, N, 64):
                lg = self.logits(hid[:, t0:t0 + 64])  # [b, n, V] float32
                mx, best = lg.max(-1)
                tok = cand[b0:b0 + rows, t0:t0 + 64]
                got = lg.gather(-1, tok.unsqueeze(-1)).squeeze(-1)
                bad = got < mx - tolerance
                ok = (mx - got).masked_fill(bad, 0.0)
                self.max_deficit = max(self.max_deficit, float(ok.max()))
                if bool(bad.any()):
                    for b, t in bad.nonzero().tolist():
                        s, step = b0 + b, t0 + t
                        if first is None or (s, step) < (first["sequence"], first["step"]):
                            first = {"sequence": s, "step": step, "token": int(tok[b, t]), "tokenLogit": round(float(got[b, t]), 4),
                                     "best": int(best[b, t]), "maxLogit": round(float(mx[b, t]), 4)}
            if first is not None:
                return first  # the earliest sequences come first: nothing later can be earlier
        return first


def save_tiny_qwen3(model_dir: str, *, layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128,
                    vocab=256, seed=0, std=0.2, dtype=torch.float32, tied=True, shards=1) -> None:
    """A Qwen3-shaped checkpoint with random weights, in HF layout (tests; the GPU run builds the
    real-sized one with transformers' Qwen3Config)."""
    from .safetensors_io import save_file

    os.makedirs(model_dir, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape: (torch.randn(*shape, generator=g) * std).to(dtype)
    ones = lambda n: (1.0 + 0.1 * torch.randn(n, generator=g)).to(dtype)
    t = {"model.embed_tokens.weight": rnd(vocab, hidden), "model.norm.weight": ones(hidden)}
    if not tied:
        t["lm_head.weight"] = rnd(vocab, hidden)
    for i in range(layers):
        p = f"model.layers.{i}."
        t.update({
            p + "input_layernorm.weight": ones(hidden), p + "post_attention_layernorm.weight": ones(hidden),
            p + "self_attn.q_proj.weight": rnd(heads * head_dim, hidden), p + "self_attn.k_proj.weight": rnd(kv_heads * head_dim, hidden),
            p + "self_attn.v_proj.weight": rnd(kv_heads * head_dim, hidden), p + "self_attn.o_proj.weight": rnd(hidden, heads * head_dim),
            p + "self_attn.q_norm.weight": ones(head_dim), p + "self_attn.k_norm.weight": ones(head_dim),
            p + "mlp.gate_proj.weight": rnd(ffn, hidden), p + "mlp.up_proj.weight": rnd(ffn, hidden), p + "mlp.down_proj.weight": rnd(hidden, ffn),
        })
    config = {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim, "intermediate_size": ffn,
        "vocab_size": vocab, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": tied,
        "max_position_embeddings": 4096, "hidden_act": "silu", "attention_bias": False,
        "torch_dtype": str(dtype).replace("torch.", ""),
    }
    with open(os.path.join(model_dir, "config.json"), "w") as fh:
        json.dump(config, fh, indent=1)
    names = sorted(t)
    if shards == 1:
        save_file(t, os.path.join(model_dir, "model.safetensors"), metadata={"format": "pt"})
        return
    weight_map = {}
    per = math.ceil(len(names) / shards)
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: t[n] for n in names[s * per:(s + 1) * per]}
        save_file(part, os.path.join(model_dir, fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in part})
    with open(os.path.join(model_dir, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": weight_map}, fh)
