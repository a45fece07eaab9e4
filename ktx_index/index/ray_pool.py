"""``rebuild --ray``: a build's texts embedded by a pool of Ray actors, written by this process as before.

Only the embedding is distributed: it is most of a large build's time and embarrassingly parallel (int8
MiniLM encodes one text per call, so a text's vector does not depend on its batch or on the worker). Parsing,
the store, tantivy and the vector file stay with the one writer; the vector cache keyed by text hash stays
the authority, so a batch lost with its worker is sent again to another, a batch still in flight when the
build stops is simply embedded by the next run, and no text is stored twice.

Each actor owns one CPU and loads the model once, through the same ``MiniLMEmbedder`` (ONNX Runtime, int8)
as a local build; it reports the model fingerprint it loaded, and a worker whose fingerprint differs from
this process's is refused (another ktx-index version or model on that node would mix vector spaces).
Batches are cut by token count (about ``BATCH_TOKENS`` each), two per actor in flight so none waits.

Ray is an optional extra (``pip install -e '.[ray]'``): it is imported here only, and only the rebuild
command imports this module, when ``--ray`` is given.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import resource
import socket
import time
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ktx_index.embedding.embedder import Embedder, MiniLMEmbedder, TextGroups
from ktx_index.errors import ClusterUnavailable

INSTALL_HINT = "install the extra: pip install -e '.[ray]' (a source checkout) or pip install 'ktx-index[ray]'"
LOCAL_HINT = "what was committed is kept: a plain `ktx-index rebuild` embeds the rest on this machine"
#: Padded tokens per batch sent to a worker (~400 column texts, ~1 s of one core with int8).
BATCH_TOKENS = 8192
MAX_BATCH_TEXTS = 1024
IN_FLIGHT_PER_WORKER = 2
#: How long ``ray.wait`` blocks before the head is probed; the head is lost after this many failed probes.
POLL_S = 1.0
HEAD_PROBES = 3
#: How long to wait for a worker to load its model (the first run on a node exports it: tens of seconds).
WORKER_START_S = 300.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")
FORWARDED = ("KTX_INDEX_MODEL_CACHE", "KTX_INDEX_EMBED_RUNTIME", "XDG_CACHE_HOME")


def import_ray(loopback: bool) -> Any:
    """Ray, configured before it starts anything: no usage statistics; on one machine every process binds to
    127.0.0.1 (Ray otherwise replaces a loopback address by the machine's network address)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if loopback:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # Ray's switch for "this machine only"
    try:
        import ray
        from ray._private import ray_constants
    except ImportError as exc:
        raise ClusterUnavailable("--ray needs Ray, which is not installed", INSTALL_HINT) from exc
    if loopback:  # read at import time: set it too when Ray was imported first (tests start clusters)
        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


def embedder_factory(embedder: Embedder) -> Callable[[], Embedder]:
    """What a worker calls to load the same embedder, one CPU each (the test embedder ships as it is)."""
    if isinstance(embedder, MiniLMEmbedder):
        return functools.partial(
            MiniLMEmbedder,
            runtime=embedder.runtime,
            model=embedder.model,
            precision=embedder.precision,
            bulk_workers=1,
        )
    return lambda: embedder


def token_counter(embedder: Embedder) -> Callable[[list[str]], list[int]]:
    """Tokens per text as the model counts them (MiniLM's tokenizer, truncated as it truncates)."""
    if isinstance(embedder, MiniLMEmbedder):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(MiniLMEmbedder.base_model_dir() / "tokenizer.json"))
        tokenizer.enable_truncation(256)
        tokenizer.no_padding()
        return lambda texts: [len(e.ids) for e in tokenizer.encode_batch(texts)]
    return lambda texts: [len(t.split()) + 2 for t in texts]


class EmbedWorker:
    """One actor: loads the embedder once, then encodes batches (run through ``ray.remote`` by the pool)."""

    def __init__(self, factory: Callable[[], Embedder]) -> None:
        import ray

        self.embedder = factory()
        self.node = ray.get_runtime_context().get_node_id()

    def ready(self) -> tuple[str, str, int]:
        """Load the model (one encode) and say what was loaded where: (fingerprint, node id, pid)."""
        self.embedder.encode(["ktx-index worker warm-up"])
        return self.embedder.fingerprint, self.node, os.getpid()

    def encode(self, texts: list[str]) -> tuple[np.ndarray, str]:
        return np.asarray(self.embedder.encode(texts), dtype=np.float32), self.node

    def usage(self) -> tuple[str, float, float]:
        """(node id, peak RSS in MB, CPU seconds) of this worker process."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return self.node, own.ru_maxrss / 1024, own.ru_utime + own.ru_stime


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """What Ray raises when a worker, its node or a result went away (the batch is sent to another worker)."""
    errors = ray.exceptions
    return (errors.RayActorError, errors.ObjectLostError, errors.WorkerCrashedError, errors.NodeDiedError)


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ClusterUnavailable(f"--ray {address!r} is not an address", "give HOST:PORT of a Ray head, or auto")
    return host.strip("[]"), int(port)


def _reachable(host: str, port: int, timeout: float = 3.0) -> str | None:
    """None when a TCP connection to host:port opens, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


class RayEmbedding:
    """The embedding backend of ``rebuild --ray ADDRESS`` (``auto``: a local cluster for this run).

    ``start`` connects and starts one actor per CPU of the cluster (or ``workers``), which load their model
    while the build parses; ``close`` kills them and disconnects (a cluster started by ``auto`` stops)."""

    def __init__(
        self,
        address: str,
        embedder: Embedder,
        workers: int | None = None,
        batch_tokens: int = BATCH_TOKENS,
        on_event: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self.address, self.embedder, self.workers, self.batch_tokens = address, embedder, workers, batch_tokens
        self.on_event = on_event  # one line per notable event (the CLI prints them on stderr)
        self.texts_by_node: Counter[str] = Counter()
        self.retried = 0  # batches sent again after their worker was lost
        self.lost = 0  # workers lost
        self.nodes: set[str] = set()
        self._ray: Any = None
        self._probe: tuple[str, int] | None = None
        self._starting: dict[Any, Any] = {}  # ready() ref → actor, while it loads its model
        self._ready: dict[Any, str] = {}  # actor → its node id
        self._load: Counter[Any] = Counter()  # actor → batches in flight
        self._remote: Any = None

    # ------------------------------------------------------------------ the cluster

    def start(self) -> RayEmbedding:
        auto = self.address == "auto"
        host = "127.0.0.1" if auto else _split_address(self.address)[0]
        ray = self._ray = import_ray(loopback=host in LOOPBACK)
        env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "RAY_USAGE_STATS_ENABLED": "0"}
        if host in LOOPBACK:  # workers on this machine share its model cache and runtime choice
            env |= {k: v for k in FORWARDED if (v := os.environ.get(k))}
        options: dict[str, Any] = {
            "logging_level": logging.WARNING,
            "log_to_driver": False,
            "runtime_env": {"env_vars": env},  # workers import this process's code (a checkout or a venv)
        }
        if auto:
            try:
                ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, **options)
            except Exception as exc:
                raise ClusterUnavailable(f"cannot start a Ray cluster on this machine: {exc}", LOCAL_HINT) from exc
            self._probe = _split_address(ray.get_runtime_context().gcs_address)
        else:
            self._probe = _split_address(self.address)
            why = _reachable(*self._probe)
            if why is not None:
                raise ClusterUnavailable(
                    f"cannot reach the Ray head at {self.address} ({why})",
                    f"start one with `ray start --head --port {self._probe[1]}`, check the address, or {LOCAL_HINT}",
                )
            try:
                ray.init(address=self.address, **options)
            except Exception as exc:
                raise ClusterUnavailable(f"cannot join the Ray cluster at {self.address}: {exc}", LOCAL_HINT) from exc
        cpus = int(ray.cluster_resources().get("CPU", 0))
        count = self.workers or cpus
        if count < 1:
            self.close()
            raise ClusterUnavailable(f"the Ray cluster at {self.address} has no CPU to embed on", LOCAL_HINT)
        self._remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EmbedWorker)
        for _ in range(count):
            self._spawn()
        where = f"auto (this machine, {self._probe[0]}:{self._probe[1]})" if auto else self.address
        self.on_event(f"ray: {count} workers starting on a cluster of {cpus} CPUs at {where}")
        return self

    def wait_ready(self) -> int:
        """Block until every worker asked for has loaded its model (the benchmark times embedding apart from
        start-up); returns how many are ready."""
        deadline = time.monotonic() + WORKER_START_S
        while self._starting and time.monotonic() < deadline:
            self._promote(block=True)
        return len(self._ready)

    def _spawn(self) -> None:
        actor = self._remote.remote(embedder_factory(self.embedder))
        self._starting[actor.ready.remote()] = actor

    def close(self) -> None:
        """Kill the workers and disconnect; a cluster this run started (``auto``) stops with it."""
        ray = self._ray
        if ray is None:
            return
        self._ray = None
        for actor in [*self._ready, *self._starting.values()]:
            with contextlib.suppress(Exception):  # a lost cluster: nothing left to kill
                ray.kill(actor)
        self._starting, self._ready = {}, {}
        ray.shutdown()

    def usage(self) -> dict[str, tuple[float, float]]:
        """Per node, the workers' peak RSS (MB) and CPU seconds, summed (the benchmark asks before ``close``)."""
        out: dict[str, tuple[float, float]] = {}
        for node, mb, cpu_s in self._ray.get([actor.usage.remote() for actor in self._ready], timeout=60):
            rss, cpu = out.get(node, (0.0, 0.0))
            out[node] = (rss + mb, cpu + cpu_s)
        return out

    # ------------------------------------------------------------------ embedding

    def embed(self, groups: TextGroups, step: int) -> Generator[tuple[list[str], np.ndarray], None, None]:
        """Batches as workers finish them (any order: each carries its keys). ``step`` is ignored: batches
        are cut by tokens. Closing the generator drops what is in flight (those texts stay missing)."""
        ray = self._ray
        batches = self._batches(groups)
        queue: deque[tuple[list[str], list[str]]] = deque()  # batches to send (again, first)
        flight: dict[Any, tuple[Any, list[str], list[str]]] = {}
        exhausted = False
        failed_probes, probed = 0, time.monotonic()
        try:
            while True:
                self._promote(block=not self._ready and not flight)
                for actor in self._free_actors():
                    if not queue and not exhausted:
                        nxt = next(batches, None)
                        exhausted = nxt is None
                        if nxt is not None:
                            queue.append(nxt)
                    if not queue:
                        break
                    keys, texts = queue.popleft()
                    flight[actor.encode.remote(texts)] = (actor, keys, texts)
                    self._load[actor] += 1
                if not flight:
                    if exhausted and not queue:
                        return
                    continue  # no worker free: _promote waits for one (or says the cluster is gone)
                done, _ = ray.wait(list(flight), num_returns=1, timeout=POLL_S)
                if time.monotonic() - probed >= POLL_S:  # results can flow from workers while the head is gone
                    probed = time.monotonic()
                    failed_probes = failed_probes + 1 if _reachable(*self._probe) else 0
                    if failed_probes >= HEAD_PROBES:
                        raise self._lost_cluster("its head stopped answering")
                if not done:
                    continue
                actor, keys, texts = flight.pop(done[0])
                self._load[actor] -= 1
                try:
                    matrix, node = ray.get(done[0])
                except _lost_errors(ray) as exc:
                    self._worker_lost(actor, exc)
                    queue.appendleft((keys, texts))  # another worker embeds it; nothing was written
                    self.retried += 1
                    continue
                self.texts_by_node[node] += len(keys)
                yield keys, matrix
        finally:
            for ref in flight:
                with contextlib.suppress(Exception):  # a lost cluster has nothing left to cancel
                    ray.cancel(ref)

    def _batches(self, groups: Iterable[list[tuple[str, str]]]) -> Generator[tuple[list[str], list[str]], None, None]:
        count = token_counter(self.embedder)
        for group in groups:
            tokens = count([text for _, text in group])
            keys: list[str] = []
            texts: list[str] = []
            width = 0
            for (key, text), n in zip(group, tokens, strict=True):
                width = max(width, n)  # the group is shortest first: a batch pads to its last text
                if keys and (width * (len(keys) + 1) > self.batch_tokens or len(keys) >= MAX_BATCH_TEXTS):
                    yield keys, texts
                    keys, texts, width = [], [], n
                keys.append(key)
                texts.append(text)
            if keys:
                yield keys, texts

    def _free_actors(self) -> list[Any]:
        return sorted((a for a in self._ready if self._load[a] < IN_FLIGHT_PER_WORKER), key=lambda a: self._load[a])

    def _promote(self, block: bool) -> None:
        """Move workers that finished loading into the pool; ``block``: none is usable, wait for one."""
        ray = self._ray
        deadline = time.monotonic() + WORKER_START_S
        while self._starting:
            timeout = POLL_S if block else 0
            done, _ = ray.wait(list(self._starting), num_returns=len(self._starting), timeout=timeout)
            for ref in done:
                actor = self._starting.pop(ref)
                try:
                    fingerprint, node, _pid = ray.get(ref)
                except _lost_errors(ray) as exc:
                    self._worker_lost(actor, exc)
                    continue
                except ray.exceptions.RayTaskError as exc:  # the model failed to load there
                    raise ClusterUnavailable(
                        f"a Ray worker at {self.address} could not load the model: {exc}", LOCAL_HINT
                    ) from exc
                if fingerprint != self.embedder.fingerprint:
                    raise ClusterUnavailable(
                        f"a Ray worker on node {node[:8]} loaded model {fingerprint}, this process {self.embedder.fingerprint}",
                        "install the same ktx-index on every node (vectors of two models cannot share an index)",
                    )
                self._ready[actor] = node
                self.nodes.add(node)
            if self._ready or not block:
                return
            if _reachable(*self._probe) is not None:
                raise self._lost_cluster("its head stopped answering")
            if ray.cluster_resources().get("CPU", 0) < 1:
                raise self._lost_cluster("no node with a CPU is left")
            if time.monotonic() > deadline:
                break
        if block and not self._ready:
            raise self._lost_cluster("no worker is left to embed on")

    def _worker_lost(self, actor: Any, exc: Exception) -> None:
        """A worker died (its node was lost): its batches go to the others, and a replacement is asked for,
        which starts when the cluster has a CPU free for it (a node restarted or added)."""
        self._ready.pop(actor, None)
        self._load.pop(actor, None)
        self.lost += 1
        with contextlib.suppress(Exception):  # if it lives on (an object lost, not the worker), free its CPU
            self._ray.kill(actor)
        if _reachable(*self._probe) is not None:  # the whole cluster went: asking it for a worker would hang
            raise self._lost_cluster("its head stopped answering")
        self.on_event(f"ray: a worker was lost ({type(exc).__name__}); its batches go to the others")
        self._spawn()

    def _lost_cluster(self, why: str) -> ClusterUnavailable:
        embedded = sum(self.texts_by_node.values())
        return ClusterUnavailable(
            f"lost the Ray cluster at {self.address}: {why} ({embedded} texts embedded and committed before)",
            LOCAL_HINT,
        )
