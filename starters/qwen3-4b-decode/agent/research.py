#!/usr/bin/env python3
"""Dryft research loop: propose an engine variant, validate, package, submit a public run, follow
it, journal the result, keep the best. Python 3.8+ standard library only. See agent/README.md.

    export DRYFT_TOKEN=dryft_pat_...            # a team API token; never stored by this script
    ./install-dryft.sh https://dryft.example.org   # records the hub in bin/dryft-hub.txt
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
import gzip
import hashlib
import io
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import unicodedata
import urllib.error
import urllib.request
import uuid

AGENT_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(AGENT_DIR)  # the starter repository

ALLOWED_EXTENSIONS = (".py", ".pyi", ".yaml", ".yml", ".json", ".toml", ".txt", ".md", ".cfg", ".ini")
ARCHIVE_LIMITS = {"compressed": 2 * 1024 * 1024, "expanded": 16 * 1024 * 1024, "files": 200}
SINGLE_FILE_LIMIT = 256 * 1024
SKIP_NAMES = {"__pycache__", ".DS_Store"}
TERMINAL = {"succeeded", "failed", "canceled"}
# What a credential looks like (the docs' placeholder dryft_pat_REPLACE_ME is not); a candidate
# containing one is never submitted.
SECRET_PATTERN = re.compile(r"dryft_(?:pat|agent)_(?!REPLACE_ME\b)[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----")


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


def check_archive_rules(files: dict) -> list:
    """The hub's archive rules (libs/src/archive/rules.ts), for a folder about to be packed."""
    problems = []
    if "engine.py" not in files:
        problems.append("entrypoint: engine.py must be at the root of the engine folder")
    if len(files) > ARCHIVE_LIMITS["files"]:
        problems.append(f"file_count: {len(files)} files; at most {ARCHIVE_LIMITS['files']}")
    expanded = sum(len(b) for b in files.values())
    if expanded > ARCHIVE_LIMITS["expanded"]:
        problems.append(f"expanded_size: {expanded} bytes; at most {ARCHIVE_LIMITS['expanded']} (16 MiB)")
    seen = {}
    for rel, data in sorted(files.items()):
        base = rel.rsplit("/", 1)[-1]
        if any(ord(c) < 32 or c == "\\" for c in rel) or "" in rel.split("/") or ".." in rel.split("/"):
            problems.append(f"paths: {rel!r} has an empty part, '..', a control character or a backslash")
        key = unicodedata.normalize("NFC", rel).lower()
        if key in seen:
            problems.append(f"unique_names: {rel} and {seen[key]} differ only by case or Unicode normalization")
        seen[key] = rel
        dot = base.rfind(".")
        ext = base[dot:].lower() if dot > 0 else ""
        if base.startswith("._"):
            problems.append(f"text: {rel} is a macOS metadata file; delete it")
        elif ext not in ALLOWED_EXTENSIONS:
            problems.append(f"extensions: {rel} ({ext or 'no extension'}) is not an allowed type; allowed: {' '.join(ALLOWED_EXTENSIONS)}")
        else:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                problems.append(f"text: {rel} is not UTF-8 text")
    return problems


def check_single_file(files: dict, filename: str) -> list:
    if set(files) != {filename}:
        return [f"filename: the submission is one file named {filename} (found {', '.join(sorted(files)) or 'nothing'})"]
    data = files[filename]
    problems = []
    if len(data) > SINGLE_FILE_LIMIT:
        problems.append(f"size: {len(data)} bytes; at most {SINGLE_FILE_LIMIT} (256 KiB)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("text: not UTF-8 text")
    return problems


def pack(files: dict) -> bytes:
    """Deterministic .tar.gz with engine.py at its root: sorted, mtime 0, uid/gid 0, mode 0644."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(files):
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(files[rel]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[rel]))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def find_secrets(files: dict) -> list:
    hits = []
    for rel, data in files.items():
        if SECRET_PATTERN.search(data.decode("utf-8", "replace")):
            hits.append(rel)
    return hits


def dryft_binary():
    for name in ("dryft", "dryft.cmd"):
        path = os.path.join(ROOT, "bin", name)
        if os.path.isfile(path):
            return path
    return None


# -- the hub's HTTP API ---------------------------------------------------------------------------

class Hub:
    def __init__(self, url: str, token: str, retries: int = 4, backoff: float = 1.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff = backoff

    def _once(self, method: str, path: str, body, headers: dict):
        req = urllib.request.Request(self.url + path, data=body, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        req.add_header("User-Agent", "dryft-research-loop/1")
        for k, v in headers.items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                return res.status, res.read(), dict(res.headers)
        except urllib.error.HTTPError as err:
            return err.code, err.read(), dict(err.headers or {})

    def request(self, method: str, path: str, body=None, headers=None, retry_statuses=(429, 500, 502, 503, 504)):
        """JSON request with retries on network errors and retryable statuses; the same headers
        (so the same Idempotency-Key) on every attempt."""
        headers = dict(headers or {})
        if isinstance(body, dict):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(30.0, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2))
            try:
                status, raw, res_headers = self._once(method, path, body, headers)
            except (urllib.error.URLError, OSError) as err:
                last = f"cannot reach {self.url} ({getattr(err, 'reason', err)})"
                continue
            data = None
            try:
                data = json.loads(raw.decode("utf-8")) if raw else None
            except ValueError:
                pass
            if status in retry_statuses and attempt < self.retries:
                last = f"HTTP {status}"
                retry_after = res_headers.get("Retry-After") or res_headers.get("retry-after")
                if status == 429 and retry_after and retry_after.isdigit() and int(retry_after) > 120:
                    break  # a daily limit, not a blip
                continue
            if 200 <= status < 300:
                return data, res_headers
            err = (data or {}).get("error", {}) if isinstance(data, dict) else {}
            code, message = err.get("code", f"http_{status}"), err.get("message", (raw or b"").decode("utf-8", "replace")[:300])
            if status == 401:
                raise LoopError(f"the hub refused the token ({code}): {message} Check DRYFT_TOKEN (a team API token, copied in full; ./bin/dryft doctor tells more).")
            raise HubError(status, code, message)
        raise LoopError(f"{method} {path} failed after {self.retries + 1} attempts: {last}. Is the hub up ({self.url}/api/health)?")

    def upload(self, benchmark: str, filename: str, data: bytes) -> dict:
        boundary = "----dryft" + uuid.uuid4().hex
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="benchmark"\r\n\r\n{benchmark}\r\n'.encode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode(),
            data,
            f"\r\n--{boundary}--\r\n".encode(),
        ]
        # Uploads have no idempotency key: retry only where the hub cannot have stored anything.
        body, _ = self.request("POST", "/api/submissions", b"".join(parts), {"Content-Type": f"multipart/form-data; boundary={boundary}"}, retry_statuses=(502, 503, 504))
        return body["submission"]

    def create_run(self, submission_id: str, body: dict, key: str) -> dict:
        data, headers = self.request("POST", f"/api/submissions/{submission_id}/runs", body, {"Idempotency-Key": key})
        return data["run"]

    def run(self, run_id: str) -> dict:
        return self.request("GET", f"/api/runs/{run_id}")[0]

    def logs(self, run_id: str, after: int) -> dict:
        return self.request("GET", f"/api/runs/{run_id}/logs?after={after}")[0]

    def result(self, run_id: str) -> dict:
        return self.request("GET", f"/api/runs/{run_id}/result")[0]


class HubError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


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
        self.poll = float(os.environ.get("DRYFT_POLL_SECONDS", "2"))
        if not self.benchmark:
            raise LoopError("no benchmark: dryft.json at the repository root names it (or pass --benchmark)")
        if self.mode == "official" and not args.yes:
            raise LoopError("official runs count and are limited per day: pass --yes to let the loop start them (public runs are the default)")
        self.hub = None
        if not args.dry_run:
            token = os.environ.get("DRYFT_TOKEN", "").strip()
            if not token:
                raise LoopError('DRYFT_TOKEN is not set. A team owner or admin creates a token under API tokens; then export DRYFT_TOKEN="dryft_pat_..." in this terminal (never in a file in this repository).')
            self.hub = Hub(resolve_hub(args.api_url)[0], token, retries=args.retries)

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

    def validate(self, files: dict, name: str):
        """Returns (upload filename, upload bytes); raises CandidateRefused with the reasons."""
        secrets = find_secrets(files)
        if secrets:
            raise CandidateRefused(f"a credential-like string is in {', '.join(secrets)}; remove it (tokens live only in DRYFT_TOKEN)")
        folder = os.path.join(self.work, name)
        shutil.rmtree(folder, ignore_errors=True)
        write_tree(files, folder)
        if self.single_file:
            filename = os.path.basename(self.target)
            problems, data, target = check_single_file(files, filename), files.get(filename, b""), os.path.join(folder, filename)
        else:
            filename = "submission.tar.gz"
            data = pack(files)
            problems = check_archive_rules(files)
            if len(data) > ARCHIVE_LIMITS["compressed"]:
                problems.append(f"compressed_size: {len(data)} bytes; at most {ARCHIVE_LIMITS['compressed']} (2 MiB)")
            target = folder
        dryft = dryft_binary()
        if dryft and not self.args.builtin_validate:
            try:
                proc = subprocess.run([dryft, "validate", target], cwd=ROOT, capture_output=True, text=True, timeout=120)
            except OSError as err:
                say(f"bin/dryft could not run ({err}); using the built-in rules")
            else:
                if proc.returncode != 0:
                    raise CandidateRefused("dryft validate refused it:\n" + (proc.stdout + proc.stderr).strip())
                say(f"{name}: dryft validate passed")
                if problems:  # the CLI is the authority; say where the built-in check disagrees
                    say(f"note: the built-in check would have refused: {'; '.join(problems)}")
                return filename, data
        if problems:
            raise CandidateRefused("the archive rules refuse it: " + "; ".join(problems))
        say(f"{name}: valid ({len(files)} file(s), {len(data)} bytes to upload; built-in rules{'' if dryft else ', no bin/dryft'})")
        return filename, data

    # one run --------------------------------------------------------------------------------

    def submit_and_follow(self, name: str, source: str, files: dict, tree: str, filename: str, data: bytes) -> dict:
        base = {"benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree,
                "uploadSha256": hashlib.sha256(data).hexdigest()}
        pending = self.journal.pending(tree, self.benchmark, self.mode)
        if pending:
            key, submission_id = pending["idempotencyKey"], pending["submissionId"]
            say(f"{name}: resuming the run intended earlier (Idempotency-Key {key})")
        else:
            submission = self.hub.upload(self.benchmark, filename, data)
            submission_id, key = submission["id"], str(uuid.uuid4())
            say(f"{name}: submitted as {submission['name']} (submission {submission_id})")
            self.journal.append({**base, "phase": "intent", "submissionId": submission_id, "idempotencyKey": key})
        body = {"mode": self.mode}
        if self.mode == "official":
            body["confirm"] = True
        if self.tier:
            body["tier"] = self.tier
        if self.dataset:
            body["dataset"] = self.dataset
        run = self.hub.create_run(submission_id, body, key)
        say(f"{name}: {self.mode} run {run['id']} is {run['status']}")
        run = self.follow(run, os.path.join(self.work, name + ".log"))
        result = self.hub.result(run["id"])
        record = {**base, "phase": "finished", "submissionId": submission_id, "idempotencyKey": key, "runId": run["id"],
                  "status": run["status"], "failureCode": run.get("failureCode"), "message": run.get("message"),
                  "score": result.get("score", run.get("score")), "workloads": result.get("workloads", []),
                  "checks": [{"name": c.get("name"), "passed": c.get("passed"), "detail": c.get("detail")} for c in result.get("checks", [])],
                  "detail": (result.get("detail") or "")[:4000] or None}
        return record

    def follow(self, run: dict, log_path: str) -> dict:
        deadline = time.monotonic() + self.args.run_timeout
        after = 0
        with open(log_path, "w", encoding="utf-8") as log:
            while True:
                while True:
                    page = self.hub.logs(run["id"], after)
                    for line in page.get("items", []):
                        log.write(line["text"] + "\n")
                        if not self.args.quiet:
                            print(f"  | {line['text']}", flush=True)
                    after = page.get("nextAfter", after)
                    if not page.get("items"):
                        break
                run = self.hub.run(run["id"])
                if run["status"] in TERMINAL and (page.get("complete") or after >= run.get("lastLogSeq", 0)):
                    return run
                if time.monotonic() > deadline:
                    raise LoopError(f"run {run['id']} is still {run['status']} after {self.args.run_timeout:g} s; it goes on at the hub (follow it with ./bin/dryft logs {run['id']} --follow), and the next start of the loop resumes it")
                time.sleep(self.poll)

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
                filename, data = self.validate(files, name)
            except CandidateRefused as err:
                say(f"{name}: refused before upload: {err}")
                self.journal.append({"phase": "refused", "benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree, "reason": str(err)})
                continue
            if self.args.dry_run:
                say(f"{name}: --dry-run, not submitted")
                continue
            try:
                record = self.submit_and_follow(name, source, files, tree, filename, data)
            except HubError as err:
                say(f"{name}: the hub {self.hub.url} refused it: {err.message}")
                self.journal.append({"phase": "refused", "benchmark": self.benchmark, "mode": self.mode, "variant": name, "source": source, "treeSha256": tree, "reason": f"{err.code}: {err.message}"})
                if err.status in (403, 429):  # closed or out of runs for today: stop, do not burn the rest
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
    parser.add_argument("--retries", type=int, default=4, help="retries per HTTP request on network errors and 5xx")
    parser.add_argument("--dry-run", action="store_true", help="validate and package only; no token, no upload")
    parser.add_argument("--builtin-validate", action="store_true", help="use the built-in rules even when bin/dryft exists")
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
