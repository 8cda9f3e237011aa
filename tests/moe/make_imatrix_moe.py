#!/usr/bin/env python3
"""make_imatrix_moe.py MODEL.gguf OUT.imatrix.gguf OUT.safetensors

For every 2-D weight and expert stack of a GGUF model (gguf-py reads it),
random mean x_j^2 statistics written twice:
- OUT.imatrix.gguf in llama.cpp's layout (gguf-py's GGUFWriter): <name>.in_sum2
  F32 ne [in, n_mat] and <name>.counts F32 ne [1, n_mat], n_mat = E for an
  expert stack ([E, out, in] in numpy order), 1 otherwise; expert 2 of
  blk.1.ffn_down_exps has count 0 (zeros);
- OUT.safetensors in frontier's calibration layout (docs/calibration.md):
  <module>.act_sq_mean [in] or [E, in], token_count and
  <module>.expert_token_counts in __metadata__, the means formed as the imatrix
  reader forms them (float32(double(in_sum2) / count)), so both files hold the
  same statistics bit for bit.
"""
import json
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from split_calib import write as write_safetensors  # noqa: E402

model, out_imatrix, out_st = sys.argv[1:4]
rng = np.random.default_rng(20261202)
reader = gguf.GGUFReader(model)
DENSE = 64
writer = gguf.GGUFWriter(out_imatrix, arch="imatrix")
writer.add_type("imatrix")
writer.add_uint32("imatrix.chunk_count", 1)
tensors, meta = {}, {"token_count": str(DENSE)}
for t in reader.tensors:
    shape = [int(x) for x in reversed(list(t.shape))]  # numpy order
    if len(shape) < 2 or t.name.startswith("token_embd"):
        continue
    module = t.name[:-len(".weight")]
    n_in = shape[-1]
    n_mat = shape[0] if len(shape) == 3 else 1
    counts = np.full(n_mat, float(DENSE))
    if n_mat > 1:
        counts = rng.integers(5, DENSE, n_mat).astype(np.float64)
        if module == "blk.1.ffn_down_exps":
            counts[2] = 0
    sq = rng.uniform(0.01, 2.0, (n_mat, n_in)).astype(np.float32)
    sum2 = (sq.astype(np.float64) * counts[:, None]).astype(np.float32)
    sum2[counts == 0] = 0
    writer.add_tensor(t.name + ".in_sum2", sum2)
    writer.add_tensor(t.name + ".counts", counts.astype(np.float32).reshape(n_mat, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(counts[:, None] > 0, sum2.astype(np.float64) / counts[:, None], 0.0)
    mean = mean.astype(np.float32)
    tensors[module + ".act_sq_mean"] = mean if n_mat > 1 else mean[0]
    if n_mat > 1:
        meta[module + ".expert_token_counts"] = json.dumps([int(c) for c in counts])
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()

write_safetensors(out_st, tensors, meta)
