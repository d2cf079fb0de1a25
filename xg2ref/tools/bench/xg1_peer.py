"""The real XGrammar-1 (xgrammar 0.1.19) beside the benches, when its side environment exists.

xgrammar 0.1.19 and 0.2.8 cannot share a process (one package name), so `make peers` builds
benchmarks/peers/.venv-xg1 with xgrammar 0.1.19 and the CPU torch, and `XG1Peer` runs
xg2ref/tools/bench/xg1_peer_worker.py there, speaking JSON lines: the same decoded vocabulary
(RAW, the same stop ids and size), a compile timed inside the worker, and the masks along a token
sequence with the time of each fill, also taken inside the worker. Never used in CI.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Optional

import numpy as np

from ...tokenizer_info import TokenizerInfo

PEER_PYTHON = os.path.join("benchmarks", "peers", ".venv-xg1", "bin", "python")
WORKER = Path(__file__).with_name("xg1_peer_worker.py")


def peer_available(python: str = PEER_PYTHON) -> bool:
    return os.path.exists(python)


class XG1Peer:
    """xgrammar 0.1.19 in its own process (module docstring)."""

    def __init__(self, info: TokenizerInfo, python: str = PEER_PYTHON):
        if not peer_available(python):
            raise FileNotFoundError(f"{python} not found: `make peers` builds XGrammar-1's side environment")
        self.info, self.python = info, python
        self._start()

    def _start(self) -> None:
        info = self.info
        self.proc = subprocess.Popen([self.python, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        v = info.vocab_arrays()
        vocab = [v.token_bytes[v.token_offsets[t]:v.token_offsets[t + 1]].tobytes().hex()
                 for t in range(info.vocab_size)]
        self.version = self._ask(op="init", vocab=vocab, stop_ids=list(info.stop_token_ids),
                                 vocab_size=info.vocab_size)["version"]

    def _ask(self, timeout: Optional[float] = None, **request) -> dict:
        """The worker's reply to `request`; past `timeout` seconds the worker is killed and a new
        one started (the grammar is lost) and TimeoutError raised."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.proc.kill()
            self.proc.wait()
            self._start()
            raise TimeoutError(f"xgrammar {self.version}: no answer to {request['op']!r} within {timeout:g} s")
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"xgrammar {getattr(self, 'version', '0.1.19')}: {reply['error']}")
        return reply

    def compile(self, kind: str, text: Optional[str] = None, timeout: Optional[float] = None) -> float:
        """Compile ("ebnf", "json_schema", "builtin_json" or "structural_tag"); milliseconds, timed in
        the worker. TimeoutError past `timeout` seconds."""
        return float(self._ask(timeout, op="compile", kind=kind, text=text)["ms"])

    def masks(self, tokens: list) -> tuple[list, list]:
        """(µs per fill, bool masks) before each token and after the last, stopping at a rejected one."""
        reply = self._ask(op="masks", tokens=[int(t) for t in tokens])
        n = self.info.vocab_size
        masks = [np.unpackbits(np.frombuffer(bytes.fromhex(h), np.uint8), bitorder="little")[:n].astype(np.bool_)
                 for h in reply["masks"]]
        return reply["us"], masks

    def steps(self, tokens: list) -> dict:
        """The worker's "steps" reply, the masks as int32 words ("words") as xg2ref's bitmasks hold
        them, and "completed": the last mask allows a stop token."""
        reply = self._ask(op="steps", tokens=[int(t) for t in tokens])
        reply["words"] = [np.frombuffer(bytes.fromhex(h), np.int32).copy() for h in reply.pop("masks")]
        last = reply["words"][-1].view(np.uint32)
        reply["completed"] = reply["accepted"] == len(tokens) and any(
            (last[t >> 5] >> np.uint32(t & 31)) & 1 for t in self.info.stop_token_ids)
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
