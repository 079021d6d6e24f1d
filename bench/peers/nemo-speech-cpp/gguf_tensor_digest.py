#!/usr/bin/env python
"""sha256 over a GGUF's tensors only (name, type, shape, bytes in file order), ignoring metadata.

The Magpie GGUF's metadata embeds model_config.yaml, whose tokenizer-asset paths carry random
per-save_to() prefixes (nemo:<uuid>_ipa_cmudict...), so the whole-file sha256 changes on every
regeneration while the tensors do not. Needs the `gguf` package.
"""
import hashlib, sys
import gguf
for p in sys.argv[1:]:
    r = gguf.GGUFReader(p); h = hashlib.sha256()
    for t in r.tensors:
        h.update(t.name.encode()); h.update(t.tensor_type.name.encode())
        h.update(repr([int(x) for x in t.shape]).encode()); h.update(t.data.tobytes())
    print(h.hexdigest(), len(r.tensors), p)
