// The engines gpu-smoke submits: the unchanged starter, the fast example, one with a perturbed
// logit (must fail incorrect_output) and a "sandbox view" engine that prints what it sees.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Every file under DIR (no __pycache__), as {name, content} with paths relative to DIR. */
export function folderFiles(dir, prefix = '') {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '__pycache__') continue;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...folderFiles(full, `${prefix}${e.name}/`));
    else out.push({ name: `${prefix}${e.name}`, content: readFileSync(full) });
  }
  return out;
}

// An engine that prints what it sees from inside the agent's sandbox and its own jail, then behaves
// as its base: uid, /dev/nvidia* nodes, CUDA's and NVML's view.
export const SANDBOX_VIEW = `import json, os
from base import Engine as Base


def _view():
    v = {"uid": os.getuid(), "dev": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")),
         "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
    try:
        import torch
        v["cuda"] = torch.cuda.is_available()
        v["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as e:
        v["torch"] = repr(e)
    try:
        import pynvml
        pynvml.nvmlInit()
        used = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                used.append(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used)
            except Exception as e:
                used.append(repr(e))
        v["nvml"] = used
    except Exception as e:
        v["nvml"] = repr(e)
    return v


class Engine(Base):
    def __init__(self, model_path):
        print("sandbox-view: " + json.dumps(_view()), flush=True)
        super().__init__(model_path)
`;

/** The submissions' files, by name: starter, fast, perturbed, sandbox-view. */
export function submissions({ root, rehearsal }) {
  const starterDir = path.join(root, 'starters', rehearsal ? 'toy-decode' : 'qwen3-4b-decode');
  const fastDir = path.join(starterDir, 'examples', 'fast');
  const starterEngine = () => readFileSync(path.join(starterDir, 'engine/engine.py'));
  const fastBase = () => [
    ...folderFiles(fastDir).filter((f) => f.name !== 'engine.py'),
    { name: 'base.py', content: readFileSync(path.join(fastDir, 'engine.py')) },
  ];
  const perturbed = rehearsal
    ? [
        // The toy baseline with one wrong token: sequence 1's first token moved by one.
        { name: 'base.py', content: starterEngine() },
        {
          name: 'engine.py',
          content: Buffer.from(
            'from base import Engine as Base\n\n\nclass Engine(Base):\n    def generate(self, input_ids, max_new_tokens):\n        for i, step in enumerate(super().generate(input_ids, max_new_tokens)):\n            if i == 0 and len(step) > 1:\n                step = list(step)\n                step[1] = (step[1] + 1) % self.V\n            yield step\n',
          ),
        },
      ]
    : [
        ...fastBase(),
        {
          name: 'engine.py',
          content: readFileSync(path.join(root, 'harness/tests/engines/qwen3_perturbed.py')),
        },
      ];
  const viewBase = rehearsal ? [{ name: 'base.py', content: starterEngine() }] : fastBase();
  return {
    fastDir,
    files: {
      starter: folderFiles(path.join(starterDir, 'engine')),
      fast: folderFiles(fastDir),
      perturbed,
      'sandbox-view': [...viewBase, { name: 'engine.py', content: Buffer.from(SANDBOX_VIEW) }],
    },
  };
}
