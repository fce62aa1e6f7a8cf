"""``ndgrad.hub``: torch.hub for ndgrad: entry points from a repository's ``hubconf.py`` (a
GitHub repository or a local directory) and checkpoints downloaded from URLs.

The cache directory (``get_dir()``) is ``<home>/hub``, where ``<home>`` is ``$NDGRAD_HOME`` if
set, else ``$TORCH_HOME`` if set (as torch, so a shared torch cache is reused), else
``$XDG_CACHE_HOME/ndgrad`` (``~/.cache/ndgrad`` when ``XDG_CACHE_HOME`` is unset): ndgrad's own
default, so its downloads do not mix with torch's ``~/.cache/torch``. ``set_dir`` overrides it
all. Downloaded GitHub repositories live in ``<hub>/<owner>_<repo>_<ref>``, checkpoints in
``<hub>/checkpoints``; repositories are trusted as in torch (``trust_repo``, the ``trusted_list``
file, the owners torch trusts by default).

Example:
    >>> import os, tempfile
    >>> import ndgrad
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "hubconf.py"), "w") as f:
    ...     _ = f.write("dependencies = ['numpy']\\n"
    ...                 "def double(x):\\n    '''Twice x.'''\\n    return 2 * x\\n")
    >>> ndgrad.hub.list(d, source="local"), ndgrad.hub.help(d, "double", source="local")
    (['double'], 'Twice x.')
    >>> ndgrad.hub.load(d, "double", 21, source="local")
    42
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from .serialization import load as _load_file

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

# ``name-<hex>.ext``: the hex digits are a prefix of the file's SHA-256 (check_hash=True)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_NDGRAD_HOME = "NDGRAD_HOME"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_hub_dir: Optional[str] = None


class _Progress:
    """A bare progress report on stderr (percent, or bytes when the size is unknown), used when
    tqdm is not installed."""

    def __init__(self, total: Optional[int] = None, disable: bool = False, **_: Any) -> None:
        self.total, self.disable, self.n = total, disable, 0

    def update(self, n: int) -> None:
        if self.disable:
            return
        self.n += n
        if self.total is None:
            sys.stderr.write(f"\r{self.n:.1f} bytes")
        else:
            sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
        sys.stderr.flush()

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.disable:
            sys.stderr.write("\n")


def _progress_bar(**kwargs: Any) -> Any:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]  # optional: a nicer bar
    except ImportError:
        return _Progress(**kwargs)
    return tqdm(**kwargs)


def _home() -> str:
    home = os.getenv(ENV_NDGRAD_HOME) or os.getenv(ENV_TORCH_HOME)
    if home is None:
        home = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "ndgrad")
    return os.path.expanduser(home)


def get_dir() -> str:
    """The hub cache directory: the one ``set_dir`` gave, else ``<home>/hub`` (see the module
    docstring for ``<home>``).

    Example:
        >>> import ndgrad
        >>> ndgrad.hub.get_dir().endswith("hub")
        True
    """
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_home(), "hub")


def set_dir(d: Union[str, "os.PathLike[str]"]) -> None:
    """Use ``d`` (``~`` expanded) as the hub cache directory from now on.

    Example:
        >>> import ndgrad, os
        >>> old = ndgrad.hub.get_dir()
        >>> ndgrad.hub.set_dir("~/my_hub")
        >>> ndgrad.hub.get_dir() == os.path.expanduser("~/my_hub")
        True
        >>> ndgrad.hub.set_dir(old)
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ---- reading a hubconf.py ----

@contextlib.contextmanager
def _on_sys_path(path: str) -> Iterator[None]:
    # the repository's own modules are importable while its hubconf runs
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir: str) -> Any:
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _attr(module: Any, name: str) -> Any:
    return getattr(module, name) if name in dir(module) else None


def _entry(module: Any, model: Any) -> Any:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    deps = _attr(module, VAR_DEPENDENCY)
    if deps is not None:
        missing = [p for p in deps if importlib.util.find_spec(p) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    fn = _attr(module, model)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


# ---- GitHub repositories ----

def _repo_parts(github: str) -> tuple:
    """``owner/name[:ref]`` -> (owner, name, ref); without a ref, ``main`` if GitHub has it,
    else ``master`` (offline: whichever is cached)."""
    repo, ref = github.split(":") if ":" in github else (github, None)
    owner, name = repo.split("/")
    if ref is not None:
        return owner, name, ref
    try:
        with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
            ref = "main"
    except HTTPError as e:
        if e.code != 404:
            raise
        ref = "master"
    except URLError as e:
        for guess in ("main", "master"):
            if os.path.exists(f"{get_dir()}/{owner}_{name}_{guess}"):
                return owner, name, guess
        raise RuntimeError("It looks like there is no internet connection and the repo could "
                           f"not be found in the cache ({get_dir()})") from e
    return owner, name, ref


def _read_json(req: Request) -> Any:
    with urlopen(req) as r:
        return json.loads(r.read().decode(r.headers.get_content_charset("utf-8")))


def _check_ref_in_repo(owner: str, name: str, ref: str) -> None:
    # A ref of a fork is reachable through the upstream's archive URL too; refuse it unless it
    # names one of the repository's own branches or tags (or a commit they point at).
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for kind in ("branches", "tags"):
        page = 1
        while True:
            url = f"https://api.github.com/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            try:
                items = _read_json(Request(url, headers=headers))
            except HTTPError:
                headers.pop("Authorization", None)      # a token without the rights: retry
                items = _read_json(Request(url, headers=headers))
            if not items:
                break
            if any(i["name"] == ref or i["commit"]["sha"].startswith(ref) for i in items):
                return
            page += 1
    raise ValueError(f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a commit "
                     "from a forked repo, please call hub.load() with forked repo directly.")


def _check_trusted(owner: str, name: str, folder: str, trust_repo: Any) -> None:
    hub = get_dir()
    listing = os.path.join(hub, "trusted_list")
    Path(listing).touch()
    with open(listing) as f:
        trusted = tuple(line.strip() for line in f)
    cached = next(os.walk(hub))[1]       # a repository already downloaded was trusted then
    owner_name = f"{owner}_{name}"
    is_trusted = owner_name in trusted or folder in cached or owner in _TRUSTED_OWNERS
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add it "
            "to the trusted list of repositories (y/N)?")
        if answer.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif answer.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {answer}.")
    if not is_trusted:
        with open(listing, "a") as f:
            f.write(owner_name + "\n")


def _extract(archive: zipfile.ZipFile, dest: str) -> None:
    """Extract every member inside ``dest``, refusing absolute paths and ``..``."""
    root = Path(dest).resolve(strict=False)
    for member in archive.infolist():
        fname = os.path.normpath(member.filename)
        if fname.startswith(("/", "\\")) or (len(fname) >= 2 and fname[1] == ":"
                                              and fname[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(r"[/\\]", fname):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / fname).resolve(strict=False).is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, root)


def _remove(path: str) -> None:
    if os.path.isfile(path):
        os.remove(path)
    elif os.path.exists(path):
        shutil.rmtree(path)


def _archive_url(owner: str, name: str, ref: str) -> str:
    return f"https://github.com/{owner}/{name}/zipball/{ref}"


def _repo_dir(github: str, force_reload: bool, trust_repo: Any, verbose: bool = True,
              skip_validation: bool = False) -> str:
    """The cached checkout of ``github`` (downloaded and unpacked unless cached)."""
    hub = get_dir()
    os.makedirs(hub, exist_ok=True)
    owner, name, ref = _repo_parts(github)
    safe_ref = ref.replace("/", "_")
    folder = f"{owner}_{name}_{safe_ref}"
    repo_dir = os.path.join(hub, folder)
    _check_trusted(owner, name, folder, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _check_ref_in_repo(owner, name, ref)
    zip_path = os.path.join(hub, safe_ref + ".zip")
    _remove(zip_path)
    url = _archive_url(owner, name, ref)
    try:
        sys.stdout.write(f'Downloading: "{url}" to {zip_path}\n')
        download_url_to_file(url, zip_path, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        # 300 Multiple Choices: the ref is a branch and a tag; take the branch, as git does
        warnings.warn(
            f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? "
            "Torchhub will now assume that it's a branch. You can disambiguate tags and "
            "branches by explicitly passing refs/heads/branch_name or refs/tags/tag_name as the "
            "ref. That might require using skip_validation=True.", stacklevel=2)
        download_url_to_file(_archive_url(owner, name, f"refs/heads/{ref}"), zip_path,
                             progress=False)
    with zipfile.ZipFile(zip_path) as archive:
        top = os.path.join(hub, archive.infolist()[0].filename)
        _remove(top)
        _extract(archive, hub)
    _remove(zip_path)
    _remove(repo_dir)
    shutil.move(top, repo_dir)
    return repo_dir


def _resolve(repo_or_dir: str, source: str, force_reload: bool, trust_repo: Any,
             verbose: bool, skip_validation: bool) -> str:
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        return _repo_dir(repo_or_dir, force_reload, trust_repo, verbose=verbose,
                         skip_validation=skip_validation)
    return repo_or_dir


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check", verbose: bool = True, *,
         source: str = "github") -> builtins.list:
    """The public callables of the repository's ``hubconf.py`` (names not starting with
    ``_``), in ``dir()`` order. ``github`` is ``owner/repo[:ref]``; ndgrad also takes
    ``source="local"`` with a directory (torch's ``list`` reads GitHub only).

    Example:
        >>> import ndgrad
        >>> callable(ndgrad.hub.list)
        True
    """
    repo_dir = _resolve(github, source, force_reload, trust_repo, verbose, skip_validation)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo: Any = "check", *,
         source: str = "github") -> Optional[str]:
    """The docstring of entry point ``model`` (after checking the hubconf's
    ``dependencies``); ``source="local"`` as for ``list``.

    Example:
        >>> import ndgrad
        >>> callable(ndgrad.hub.help)
        True
    """
    repo_dir = _resolve(github, source, force_reload, trust_repo, True, skip_validation)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return _entry(module, model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = "check", force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """Call entry point ``model`` of ``hubconf.py`` with ``*args`` and ``**kwargs`` and return
    what it returns. ``source="github"``: ``repo_or_dir`` is ``owner/repo[:ref]``, downloaded
    into ``get_dir()`` once (``force_reload`` downloads again); ``source="local"``: a directory.

    Example:
        >>> import ndgrad
        >>> ndgrad.hub.load(".", "x", source="ftp")
        Traceback (most recent call last):
        ...
        ValueError: Unknown source: "ftp". Allowed values: "github" | "local".
    """
    repo_dir = _resolve(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation)
    with _on_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
        return _entry(module, model)(*args, **kwargs)


# ---- downloading files ----

def download_url_to_file(url: str, dst: str, hash_prefix: Optional[str] = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``, through a temporary ``.partial`` file beside it
    (so a failed download never leaves a truncated ``dst``). With ``hash_prefix``, the file's
    SHA-256 hex digest must start with it (else RuntimeError, and nothing is written).
    ``progress`` shows a bar on stderr.

    Example:
        >>> import ndgrad, os, pathlib, tempfile
        >>> d = tempfile.mkdtemp()
        >>> src = pathlib.Path(d, "a.txt"); _ = src.write_text("hello")
        >>> ndgrad.hub.download_url_to_file(src.as_uri(), os.path.join(d, "b.txt"),
        ...                                 progress=False)
        >>> pathlib.Path(d, "b.txt").read_text()
        'hello'
    """
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        partial = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(partial, "w+b")   # noqa: SIM115  (closed in the finally below)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as u:
            lengths = u.info().get_all("Content-Length")
            size = int(lengths[0]) if lengths else None
            digest = hashlib.sha256() if hash_prefix is not None else None
            with _progress_bar(total=size, disable=not progress, unit="B", unit_scale=True,
                               unit_divisor=1024) as bar:
                while True:
                    chunk = u.read(READ_DATA_CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    if digest is not None:
                        digest.update(chunk)
                    bar.update(len(chunk))
            f.close()
            if digest is not None and hash_prefix is not None:
                got = digest.hexdigest()
                if got[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(
                        f'invalid hash value (expected "{hash_prefix}", got "{got}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _single_file_zip(path: str) -> bool:
    # A zip with exactly one file: a checkpoint zipped by hand (torch < 1.6's convention).
    # torch.save's own zip format holds several entries.
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        members = z.infolist()
    return len(members) == 1 and not members[0].is_dir()


def load_state_dict_from_url(url: str, model_dir: Optional[str] = None,
                             map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: Optional[str] = None,
                             weights_only: bool = False) -> Dict[str, Any]:
    """``ndgrad.load`` of the file at ``url``, downloaded once into ``model_dir`` (default
    ``<get_dir()>/checkpoints``) under ``file_name`` (default: the URL's file name) and read
    from there afterwards. ``check_hash``: the file name's ``-<hex>.`` part must prefix the
    SHA-256 of the contents. A zip holding a single file (the old hand-zipped checkpoints) is
    extracted into ``model_dir`` and that file loaded, with torch's FutureWarning.

    Example:
        >>> import ndgrad, os, pathlib, tempfile
        >>> d = tempfile.mkdtemp()
        >>> ndgrad.save({"w": ndgrad.ones(2)}, os.path.join(d, "w.pt"))
        >>> sd = ndgrad.hub.load_state_dict_from_url(pathlib.Path(d, "w.pt").as_uri(),
        ...     model_dir=os.path.join(d, "cache"), progress=False, weights_only=True)
        Downloading: ...
        >>> sd["w"]
        tensor([1., 1.])
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        prefix = None
        if check_hash:
            m = HASH_REGEX.search(filename)
            prefix = m.group(1) if m else None
        download_url_to_file(url, cached, prefix, progress=progress)
    if _single_file_zip(cached):
        warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in "
                      "favor of default zipfile format introduced in 1.6. Please redo "
                      "torch.save() to save it in the new zipfile format.", FutureWarning,
                      stacklevel=2)
        with zipfile.ZipFile(cached) as z:
            if len(z.infolist()) != 1:
                raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
            _extract(z, model_dir)
            cached = os.path.join(model_dir, z.infolist()[0].filename)
    return _load_file(cached, map_location=map_location, weights_only=weights_only)
