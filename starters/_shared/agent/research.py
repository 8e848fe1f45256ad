#!/usr/bin/env python3
"""Dryft research loop: propose an engine variant, validate, package, submit a public run, follow
it, journal the result, keep the best. Python 3.8+ standard library only. See agent/README.md.

Validating, packaging, uploading, starting and following runs and reading results are the
repository's own CLI, bin/dryft (the hub's rules and client, installed by ./install-dryft.sh);
this script decides what to submit and journals what came back.

    export DRYFT_TOKEN=dryft_pat_...            # a team API token; never stored by this script
    ./install-dryft.sh https://dryft.example.org   # installs bin/dryft, records the hub in bin/dryft-hub.txt
    python3 agent/research.py --iterations 3
    python3 agent/research.py --propose "my-agent --edit {dir}" --iterations 5 --apply

The hub is the one bin/dryft uses: --api-url, else $DRYFT_API_URL, else the hub install-dryft.sh
recorded in bin/dryft-hub.txt, else http://localhost:3000. The benchmark is the repository's, from
dryft.json at its root (the file every ./bin/dryft command reads too).

Candidates, in order: the current submission as-is (its measured score is the bar to beat, skipped
when the journal already has it), then every folder of agent/variants/ and examples/ (sorted),
each copied over the best tree so far, or, with --propose, whatever the command leaves in a copy of
the best tree. A candidate whose files the journal has already measured is not submitted again.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(AGENT_DIR)  # the starter repository

SKIP_NAMES = {"__pycache__", ".DS_Store"}
# What a credential looks like (the docs' placeholder dryft_pat_REPLACE_ME is not); a candidate
# containing one is never submitted.
SECRET_PATTERN = re.compile(r"dryft_(?:pat|agent)_(?!REPLACE_ME\b)[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----")
# bin/dryft's exit codes (./bin/dryft --help): what the loop does with each answer.
EXIT_RUN_FAILED, EXIT_AUTH, EXIT_NETWORK, EXIT_SERVER = 1, 3, 4, 5
# Refusals that hold for the rest of the day or round: the loop stops instead of burning the rest.
STOP_CODES = {"submissions_closed", "evaluations_closed", "daily_limit_reached", "public_run_quota", "upload_quota"}


DEFAULT_HUB = "http://localhost:3000"


def resolve_hub(api_url=None) -> tuple:
    """(hub URL, where it came from), with bin/dryft's precedence."""
    if api_url:
        return api_url.rstrip("/"), "--api-url"
    env = os.environ.get("DRYFT_API_URL", "").strip()
    if env:
        return env.rstrip("/"), "DRYFT_API_URL"
    recorded = os.path.join(ROOT, "bin", "dryft-hub.txt")
    if os.path.isfile(recorded):
        with open(recorded, encoding="utf-8") as fh:
            url = fh.read().strip()
        if url:
            return url.rstrip("/"), "bin/dryft-hub.txt (recorded by install-dryft)"
    return DEFAULT_HUB, "the default; run ./install-dryft.sh HUB_URL or set DRYFT_API_URL"


def repository_settings() -> dict:
    """dryft.json at the repository root: the benchmark this repository belongs to."""
    path = os.path.join(ROOT, "dryft.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except ValueError as err:
        raise LoopError(f"dryft.json is not valid JSON ({err}); it names this repository's benchmark, e.g. {{\"benchmark\": \"toy-decode\"}}")
    return data if isinstance(data, dict) else {}


class LoopError(Exception):
    """Something the user must fix (configuration, token, hub unreachable): stops the loop."""


class CandidateRefused(Exception):
    """This candidate cannot be submitted (rules, secrets, proposal failed): journal it, go on."""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def say(msg: str) -> None:
    print(f"[research] {msg}", flush=True)


# -- files, rules, packaging ----------------------------------------------------------------------

def read_tree(folder: str) -> dict:
    """{relative posix path: bytes} of a folder, without caches; links are refused."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES)
        for d in dirnames:
            if os.path.islink(os.path.join(dirpath, d)):
                raise CandidateRefused(f"{os.path.relpath(os.path.join(dirpath, d), folder)} is a symbolic link; only regular files can be submitted")
        for name in sorted(filenames):
            if name in SKIP_NAMES or name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if os.path.islink(full) or not os.path.isfile(full):
                raise CandidateRefused(f"{rel} is a link or special file; only regular files can be submitted")
            with open(full, "rb") as fh:
                out[rel] = fh.read()
    return out


def write_tree(files: dict, folder: str) -> None:
    """Makes `folder` hold exactly `files` (other files in it are removed, caches kept)."""
    os.makedirs(folder, exist_ok=True)
    for rel in set(read_tree(folder)) - set(files):
        os.remove(os.path.join(folder, *rel.split("/")))
    for rel, data in files.items():
        path = os.path.join(folder, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)


def tree_sha256(files: dict) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def find_secrets(files: dict) -> list:
    hits = []
    for rel, data in files.items():
        if SECRET_PATTERN.search(data.decode("utf-8", "replace")):
            hits.append(rel)
    return hits


def dryft_binary():
    """bin/dryft as install-dryft.sh (bin/dryft) or install-dryft.ps1 (bin/dryft.cmd) left it."""
    names = ("dryft.cmd", "dryft") if os.name == "nt" else ("dryft", "dryft.cmd")
    for name in names:
        path = os.path.join(ROOT, "bin", name)
        if os.path.isfile(path):
            return path
    return None


# -- the hub, through bin/dryft -------------------------------------------------------------------

class HubError(Exception):
    """The hub (or bin/dryft on its behalf) refused a request: this candidate is journaled as refused."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"HTTP {status} {code}: {message}" if status else f"{code}: {message}")
        self.status, self.code, self.message = status, code, message

    @property
    def stops_the_loop(self) -> bool:
        """Closed, or out of runs for today: every further candidate would be refused the same way."""
        return self.status in (403, 429) or self.code in STOP_CODES


class Dryft:
    """The repository's CLI, driven with --json: validation and packaging with the hub's own rules,
    then upload, run, log and result through its HTTP client. Commands that are safe to repeat
    (starting a run with the journaled Idempotency-Key, following, reading a result) are repeated
    on network and server errors, on top of the CLI's own retries; an upload is not (the CLI retries
    only a connection that never opened, which cannot have stored anything)."""

    def __init__(self, binary: str, hub=None, retries: int = 4, backoff: float = 1.0) -> None:
        self.binary, self.hub, self.retries, self.backoff = binary, hub, retries, backoff
        self.env = dict(os.environ, NO_COLOR="1")
        poll = os.environ.get("DRYFT_POLL_SECONDS")
        if poll and "DRYFT_POLL_MS" not in self.env:
            self.env["DRYFT_POLL_MS"] = str(int(float(poll) * 1000))

    def argv(self, args: list, json_out: bool = True) -> list:
        hub = ["--api-url", self.hub] if self.hub else []
        return [self.binary] + (["--json"] if json_out else []) + hub + list(args)

    def _run(self, args: list, json_out: bool = True, timeout: float = 600):
        try:
            proc = subprocess.run(self.argv(args, json_out), cwd=ROOT, env=self.env, capture_output=True,
                                  text=True, encoding="utf-8", errors="replace", timeout=timeout)
        except OSError as err:
            raise LoopError(f"bin/dryft could not run ({err}); reinstall it with ./install-dryft.sh (it needs Node.js 20 or newer)")
        except subprocess.TimeoutExpired:
            raise LoopError(f"bin/dryft {args[0]} did not finish within {timeout:g} s")
        return proc.returncode, parse_json(proc.stdout), proc.stdout + proc.stderr

    def _sleep(self, attempt: int) -> None:
        time.sleep(min(30.0, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2))

    def _repeatable(self, args: list, ok=(0,)):
        """Runs a command that is safe to repeat; (exit code, JSON answer) once it is not a network or server error."""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(attempt)
            rc, data, text = self._run(args)
            if rc in ok:
                return data
            if rc not in (EXIT_NETWORK, EXIT_SERVER) or attempt == self.retries:
                raise self.failure(rc, data, text, f"dryft {args[0]}", attempt + 1)
        raise AssertionError("unreachable")

    def failure(self, rc: int, data, text: str, what: str, attempts: int = 1) -> Exception:
        """bin/dryft's --json error as the loop's: a setup problem stops it, a refusal skips the candidate."""
        err = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), dict) else {}
        code = err.get("code") or f"exit_{rc}"
        message = (err.get("message") or text.strip() or f"bin/dryft exited with {rc}").strip()
        status = err.get("status") if isinstance(err.get("status"), int) else 0
        first = message.splitlines()[0]
        tries = f" ({attempts} attempts)" if attempts > 1 else ""
        if rc == EXIT_NETWORK:
            return LoopError(f"{what} failed{tries}: cannot reach {self.hub}: {first} Is the hub up ({self.hub}/api/health)?")
        if rc == EXIT_AUTH and status != 403:
            return LoopError(f"the hub refused the token ({code}): {first} Check DRYFT_TOKEN (a team API token, copied in full; ./bin/dryft doctor tells more).")
        if rc == EXIT_SERVER:
            return LoopError(f"{what} failed{tries}: {first}")
        return HubError(status, code, message)

    # offline ------------------------------------------------------------------------------------

    def validate(self, target: str) -> None:
        """`dryft validate`: the hub's own rules, rule by rule; raises CandidateRefused with its report."""
        rc, _, text = self._run(["validate", target], json_out=False, timeout=120)
        if rc != 0:
            raise CandidateRefused("dryft validate refused it:\n" + text.strip())

    def package(self, folder: str, output: str) -> dict:
        """`dryft package`: the deterministic .tar.gz an upload must be ({output, bytes, sha256, files})."""
        rc, data, text = self._run(["package", folder, "--output", output], timeout=120)
        if rc != 0 or not isinstance(data, dict) or not data.get("ok"):
            raise CandidateRefused("dryft package refused it:\n" + text.strip())
        return data

    # the hub ------------------------------------------------------------------------------------

    def upload(self, path: str, benchmark: str) -> dict:
        """`dryft submit --upload-only`: the stored submission; a single file's run is started by create_run."""
        rc, data, text = self._run(["submit", path, "--benchmark", benchmark, "--upload-only"])
        if rc != 0 or not isinstance(data, dict) or "submission" not in data:
            raise self.failure(rc, data, text, "dryft submit")
        return data["submission"]

    def create_run(self, submission_id: str, mode: str, key: str, tier=None, dataset=None) -> dict:
        """`dryft run` with the journaled key: however often it is asked, at most one run exists."""
        args = ["run", submission_id, "--mode", mode, "--idempotency-key", key]
        args += (["--tier", tier] if tier else []) + (["--dataset", dataset] if dataset else [])
        args += ["--yes"] if mode == "official" else []
        return self._repeatable(args)["run"]

    def result(self, run_id: str) -> dict:
        """`dryft result`: score, checks, per-workload figures (exit 1 is a failed run's result, not an error)."""
        return self._repeatable(["result", run_id], ok=(0, EXIT_RUN_FAILED))

    def follow(self, run_id: str, log_path: str, echo: bool, timeout: float) -> dict:
        """`dryft logs --follow`: writes the log to log_path (echoed unless quiet); the run once it ended.
        A follower cut off by the network resumes after the last line it wrote."""
        deadline = time.monotonic() + timeout
        after = 0
        with open(log_path, "w", encoding="utf-8") as log:
            for attempt in range(self.retries + 1):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if attempt:
                    self._sleep(attempt)
                final, rest = None, []
                with tempfile.TemporaryFile() as errors:
                    try:
                        proc = subprocess.Popen(self.argv(["logs", run_id, "--follow", "--after", str(after)]), cwd=ROOT, env=self.env,
                                                stdout=subprocess.PIPE, stderr=errors, text=True, encoding="utf-8", errors="replace")
                    except OSError as err:
                        raise LoopError(f"bin/dryft could not run ({err}); reinstall it with ./install-dryft.sh (it needs Node.js 20 or newer)")
                    timer = threading.Timer(left, proc.kill)
                    timer.start()
                    try:
                        for raw in proc.stdout:
                            item = parse_json(raw)
                            if isinstance(item, dict) and isinstance(item.get("run"), dict):
                                final = item["run"]
                            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                                log.write(item["text"] + "\n")
                                log.flush()
                                if echo:
                                    print(f"  | {item['text']}", flush=True)
                                after = max(after, int(item.get("seq") or after))
                            else:
                                rest.append(raw)  # an error is one pretty-printed JSON object
                        rc = proc.wait()
                    finally:
                        timer.cancel()
                    errors.seek(0)
                    text = "".join(rest) + errors.read().decode("utf-8", "replace")
                if final is not None:
                    return final
                if time.monotonic() >= deadline:
                    break
                if rc not in (EXIT_NETWORK, EXIT_SERVER) or attempt == self.retries:
                    raise self.failure(rc, parse_json("".join(rest)), text, f"dryft logs {run_id} --follow", attempt + 1)
        raise LoopError(f"run {run_id} is still going after {timeout:g} s; it goes on at the hub (follow it with ./bin/dryft logs {run_id} --follow), and the next start of the loop resumes it")


def parse_json(text: str):
    try:
        return json.loads(text) if text and text.strip() else None
    except ValueError:
        return None


# -- the journal ----------------------------------------------------------------------------------

class Journal:
    """Append-only JSONL, one record per event of a candidate: 'intent' before a run is created
    (so a restart reuses its Idempotency-Key), then 'finished' or 'refused'."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.records = []
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if line:
                        try:
                            self.records.append(json.loads(line))
                        except ValueError:
                            pass

    def append(self, record: dict) -> dict:
        record = {"ts": now(), **record}
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
        self.records.append(record)
        return record

    def finished(self, tree: str, benchmark: str, mode: str):
        for r in reversed(self.records):
            if r.get("phase") == "finished" and r.get("treeSha256") == tree and r.get("benchmark") == benchmark and r.get("mode") == mode:
                return r
        return None

    def pending(self, tree: str, benchmark: str, mode: str):
        """The last intent for this tree with no finished record after it: its key is reused."""
        for r in reversed(self.records):
            if r.get("treeSha256") != tree or r.get("benchmark") != benchmark or r.get("mode") != mode:
                continue
            if r.get("phase") in ("finished", "refused"):
                return None
            if r.get("phase") == "intent":
                return r
        return None

    def best(self, benchmark: str, mode: str):
        done = [r for r in self.records if r.get("phase") == "finished" and r.get("benchmark") == benchmark and r.get("mode") == mode
                and r.get("status") == "succeeded" and isinstance(r.get("score"), (int, float))]
        return max(done, key=lambda r: r["score"]) if done else None


# -- the loop -------------------------------------------------------------------------------------

class Loop:
    def __init__(self, args, config: dict) -> None:
        self.args = args
        self.config_benchmark = config.get("benchmark")
        self.benchmark = args.benchmark or self.config_benchmark or repository_settings().get("benchmark")
        self.submission = args.submission or config.get("submission", "engine")
        self.mode = args.mode or config.get("mode", "public")
        self.tier = args.tier or config.get("tier")
        self.dataset = args.dataset or config.get("dataset")
        self.single_file = self.submission.endswith(".py")
        self.target = os.path.join(ROOT, self.submission)
        self.work = os.path.join(AGENT_DIR, ".work")
        self.best_dir = os.path.join(AGENT_DIR, "best")
        self.journal = Journal(args.journal or os.path.join(AGENT_DIR, "journal.jsonl"))
        if not self.benchmark:
            raise LoopError("no benchmark: dryft.json at the repository root names it (or pass --benchmark)")
        if self.mode == "official" and not args.yes:
            raise LoopError("official runs count and are limited per day: pass --yes to let the loop start them (public runs are the default)")
        binary = dryft_binary()
        if not binary:
            raise LoopError("bin/dryft is not installed: run ./install-dryft.sh HUB_URL first (it installs the hub's own CLI into bin/, checking its sha256). The loop validates, packages and submits with it.")
        self.hub = None
        if not args.dry_run:
            token = os.environ.get("DRYFT_TOKEN", "").strip()
            if not token:
                raise LoopError('DRYFT_TOKEN is not set. A team owner or admin creates a token under API tokens; then export DRYFT_TOKEN="dryft_pat_..." in this terminal (never in a file in this repository).')
            self.hub = resolve_hub(args.api_url)[0]
        self.dryft = Dryft(binary, self.hub, retries=args.retries)

    # candidate trees -----------------------------------------------------------------------

    def current(self) -> dict:
        if self.single_file:
            if not os.path.isfile(self.target):
                raise LoopError(f"{self.submission} not found in {ROOT}")
            with open(self.target, "rb") as fh:
                return {os.path.basename(self.target): fh.read()}
        if not os.path.isdir(self.target):
            raise LoopError(f"the engine folder {self.submission}/ is missing in {ROOT}")
        return read_tree(self.target)

    def variant_folders(self) -> list:
        out = []
        for parent in (os.path.join(AGENT_DIR, "variants"), os.path.join(ROOT, "examples")):
            if os.path.isdir(parent):
                out += [os.path.join(parent, d) for d in sorted(os.listdir(parent)) if os.path.isdir(os.path.join(parent, d)) and d not in SKIP_NAMES]
        return out

    def candidates(self):
        """(name, source, files-or-callable) in order; callables build the tree from the base."""
        yield "current", self.submission, lambda base: self.current()
        if self.args.propose:
            n = 0
            while True:
                n += 1
                yield f"proposal-{n}", self.args.propose, self.propose
        for folder in self.variant_folders():
            rel = os.path.relpath(folder, ROOT).replace(os.sep, "/")
            yield os.path.basename(folder), rel, (lambda base, folder=folder: {**base, **read_tree(folder)})

    def propose(self, base: dict) -> dict:
        """Runs the user's command on a copy of the best tree; what it leaves there is the candidate."""
        folder = os.path.join(self.work, "proposal")
        shutil.rmtree(folder, ignore_errors=True)
        write_tree(base, folder)
        env = {k: v for k, v in os.environ.items() if k != "DRYFT_TOKEN"}  # the proposer never sees the token
        best = self.journal.best(self.benchmark, self.mode)
        env.update({"DRYFT_CANDIDATE_DIR": folder, "DRYFT_JOURNAL": self.journal.path, "DRYFT_BEST_SCORE": str(best["score"]) if best else ""})
        cmd = self.args.propose.replace("{dir}", shlex.quote(folder))
        say(f"proposing: {cmd}")
        proc = subprocess.run(cmd, shell=True, cwd=ROOT, env=env)
        if proc.returncode != 0:
            raise CandidateRefused(f"the proposal command exited with {proc.returncode}")
        return read_tree(folder)

    # validation and packaging --------------------------------------------------------------

    def validate(self, files: dict, name: str) -> str:
        """Returns the path to upload (the packaged archive, or the file); raises CandidateRefused with the reasons."""
        secrets = find_secrets(files)
        if secrets:
            raise CandidateRefused(f"a credential-like string is in {', '.join(secrets)}; remove it (tokens live only in DRYFT_TOKEN)")
        folder = os.path.join(self.work, name)
        shutil.rmtree(folder, ignore_errors=True)
        write_tree(files, folder)
        target = os.path.join(folder, os.path.basename(self.target)) if self.single_file else folder
        self.dryft.validate(target)
        say(f"{name}: dryft validate passed")
        if self.single_file:
            return target
        packed = self.dryft.package(folder, os.path.join(self.work, name + ".tar.gz"))
        say(f"{name}: packaged ({len(packed.get('files') or [])} file(s), {packed.get('bytes')} bytes to upload)")
        return packed["output"]

    # one run --------------------------------------------------------------------------------

    def submit_and_follow(self, name: str, source: str, files: dict, tree: str, upload: str) -> dict:
        with open(upload, "rb") as fh:
            upload_sha256 = hashlib.sha256(fh.read()).hexdigest()
        base = {"benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree,
                "uploadSha256": upload_sha256}
        pending = self.journal.pending(tree, self.benchmark, self.mode)
        if pending:
            key, submission_id = pending["idempotencyKey"], pending["submissionId"]
            say(f"{name}: resuming the run intended earlier (Idempotency-Key {key})")
        else:
            submission = self.dryft.upload(upload, self.benchmark)
            submission_id, key = submission["id"], str(uuid.uuid4())
            say(f"{name}: submitted as {submission['name']} (submission {submission_id})")
            self.journal.append({**base, "phase": "intent", "submissionId": submission_id, "idempotencyKey": key})
        run = self.dryft.create_run(submission_id, self.mode, key, tier=self.tier, dataset=self.dataset)
        say(f"{name}: {self.mode} run {run['id']} is {run['status']}")
        run = self.dryft.follow(run["id"], os.path.join(self.work, name + ".log"), echo=not self.args.quiet, timeout=self.args.run_timeout)
        result = self.dryft.result(run["id"])
        record = {**base, "phase": "finished", "submissionId": submission_id, "idempotencyKey": key, "runId": run["id"],
                  "status": run["status"], "failureCode": run.get("failureCode"), "message": run.get("message"),
                  "score": result.get("score", run.get("score")), "workloads": result.get("workloads", []),
                  "checks": [{"name": c.get("name"), "passed": c.get("passed"), "detail": c.get("detail")} for c in result.get("checks", [])],
                  "detail": (result.get("detail") or "")[:4000] or None}
        return record

    # the whole loop -------------------------------------------------------------------------

    def keep_best(self) -> None:
        best = self.journal.best(self.benchmark, self.mode)
        if not best:
            return
        files = self._trees.get(best["treeSha256"])
        if files is not None:
            shutil.rmtree(self.best_dir, ignore_errors=True)
            write_tree(files, self.best_dir)

    def run(self) -> int:
        os.makedirs(self.work, exist_ok=True)
        where = "--benchmark" if self.args.benchmark else "agent/config.json" if self.config_benchmark else "dryft.json"
        hub = "no hub (--dry-run)" if self.hub is None else "hub {} (from {})".format(*resolve_hub(self.args.api_url))
        if self.args.builtin_validate:
            say("note: --builtin-validate is no longer needed: bin/dryft validate (the hub's own rules) is the only check")
        say(f"benchmark {self.benchmark} (from {where}), {self.mode} runs, {hub}")
        self._trees = {}
        start = self.current()
        self._trees[tree_sha256(start)] = start
        best_record = self.journal.best(self.benchmark, self.mode)
        # The base for variants: the best measured tree we still have, else the current one.
        base = start
        if best_record and os.path.isdir(self.best_dir) and tree_sha256(read_tree(self.best_dir)) == best_record["treeSha256"]:
            base = read_tree(self.best_dir)
            self._trees[best_record["treeSha256"]] = base
        done = skipped = 0
        for name, source, make in self.candidates():
            if done >= self.args.iterations:
                break
            try:
                files = make(base)
            except CandidateRefused as err:
                say(f"{name}: {err}")
                self.journal.append({"phase": "refused", "benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "reason": str(err)})
                done += 1
                continue
            tree = tree_sha256(files)
            self._trees[tree] = files
            known = self.journal.finished(tree, self.benchmark, self.mode)
            if known:
                say(f"{name}: already measured (run {known['runId']}: {known['status']}, score {known.get('score')}); not submitted again")
                skipped += 1
                if skipped >= 20:
                    say("20 candidates in a row were already measured; stopping (give the proposer something new)")
                    break
                continue
            done += 1
            say(f"iteration {done}/{self.args.iterations}: {name} ({source})")
            try:
                upload = self.validate(files, name)
            except CandidateRefused as err:
                say(f"{name}: refused before upload: {err}")
                self.journal.append({"phase": "refused", "benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree, "reason": str(err)})
                continue
            if self.args.dry_run:
                say(f"{name}: --dry-run, not submitted")
                continue
            try:
                record = self.submit_and_follow(name, source, files, tree, upload)
            except HubError as err:
                say(f"{name}: the hub {self.hub} refused it: {err.message}")
                self.journal.append({"phase": "refused", "benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree, "reason": f"{err.code}: {err.message}"})
                if err.stops_the_loop:  # closed or out of runs for today: stop, do not burn the rest
                    return 1
                continue
            previous = self.journal.best(self.benchmark, self.mode)
            improved = record["status"] == "succeeded" and record["score"] is not None and (previous is None or record["score"] > previous["score"])
            record["best"] = improved
            self.journal.append(record)
            verdict = f"score {record['score']:.2f}" if record["score"] is not None else f"{record['status']} ({record['failureCode']}): {record['message']}"
            say(f"{name}: {verdict}{' — new best' if improved else ''}")
            if improved:
                base = files
                self.keep_best()
        best = self.journal.best(self.benchmark, self.mode)
        if best:
            say(f"best: {best['variant']} with score {best['score']:.2f} (run {best['runId']}); its files are in agent/best/")
            if self.args.apply and best["treeSha256"] in self._trees and best["treeSha256"] != tree_sha256(start):
                files = self._trees[best["treeSha256"]]
                if self.single_file:
                    with open(self.target, "wb") as fh:
                        fh.write(next(iter(files.values())))
                else:
                    write_tree(files, self.target)
                say(f"applied the best variant to {self.submission} (review with git diff, then commit)")
        else:
            say("no successful run yet")
        return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Dryft research loop: variants → validate → package → public run → journal → best.")
    parser.add_argument("--iterations", type=int, default=3, help="how many candidates to submit (default 3)")
    parser.add_argument("--propose", metavar="CMD", help="shell command that edits a copy of the best tree in place ({dir} or $DRYFT_CANDIDATE_DIR); run once per iteration")
    parser.add_argument("--apply", action="store_true", help="at the end, write the best variant into the engine folder")
    parser.add_argument("--benchmark", help="benchmark id (default: dryft.json at the repository root)")
    parser.add_argument("--submission", help="what is submitted, relative to the repository: a folder (engine) or a file (submission.py)")
    parser.add_argument("--mode", choices=["public", "official"], help="run mode (default public)")
    parser.add_argument("--yes", action="store_true", help="allow official runs")
    parser.add_argument("--tier")
    parser.add_argument("--dataset")
    parser.add_argument("--api-url", help="the hub (default: $DRYFT_API_URL, else the hub recorded by install-dryft in bin/dryft-hub.txt, else http://localhost:3000)")
    parser.add_argument("--journal", help="JSONL journal (default agent/journal.jsonl, git-ignored)")
    parser.add_argument("--run-timeout", type=float, default=3600.0, help="seconds to follow one run (default 3600)")
    parser.add_argument("--retries", type=int, default=4, help="repeats of a bin/dryft command that is safe to repeat (run, follow, result) on network errors and 5xx, on top of the CLI's own retries")
    parser.add_argument("--dry-run", action="store_true", help="validate and package only; no token, no upload")
    parser.add_argument("--builtin-validate", action="store_true", help=argparse.SUPPRESS)  # gone: bin/dryft is the only check
    parser.add_argument("--quiet", action="store_true", help="do not echo run logs")
    args = parser.parse_args(argv)
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    config = {}
    config_path = os.path.join(AGENT_DIR, "config.json")
    if os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as fh:
            config = json.load(fh)
    try:
        return Loop(args, config).run()
    except LoopError as err:
        hub, source = resolve_hub(args.api_url)
        print(f"research: {err}\nresearch: hub {hub} (from {source})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("research: interrupted; the journal keeps what finished, and a pending run is resumed next time", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
