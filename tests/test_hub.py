"""ndgrad.hub against torch.hub, offline: local hubconf directories, GitHub downloads served by a
stand-in for urlopen (the same stand-in for both), file:// and local-HTTP downloads."""

import builtins
import email.message
import hashlib
import http.server
import io
import json
import os
import pathlib
import re
import threading
import urllib.response
import zipfile
from urllib.error import HTTPError

import numpy as np
import pytest
import torch
import torch.hub as th

import ndgrad
import ndgrad.hub as nh

HUBCONF = '''
dependencies = ["numpy"]
import helper_mod_for_hub_test as helper


def double(x, scale=1):
    """Twice x (times scale)."""
    return helper.TWO * x * scale


def _private():
    return 0


not_callable = 3
'''


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF)
    (d / "helper_mod_for_hub_test.py").write_text("TWO = 2\n")
    return d


@pytest.fixture
def hub_dirs(tmp_path):
    # Each library gets its own cache directory; both are restored afterwards.
    old_t, old_n = th._hub_dir, nh._hub_dir
    th.set_dir(str(tmp_path / "thub"))
    nh.set_dir(str(tmp_path / "nhub"))
    yield tmp_path / "thub", tmp_path / "nhub"
    th._hub_dir, nh._hub_dir = old_t, old_n


def _both_raise(fn):
    with pytest.raises(Exception) as theirs:
        fn(th)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        fn(nh)


def test_get_dir_environment_rules(monkeypatch, tmp_path):
    monkeypatch.setattr(nh, "_hub_dir", None)
    for var in ("NDGRAD_HOME", "TORCH_HOME", "XDG_CACHE_HOME", "TORCH_HUB"):
        monkeypatch.delenv(var, raising=False)
    assert nh.get_dir() == os.path.expanduser("~/.cache/ndgrad/hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nh.get_dir() == str(tmp_path / "xdg" / "ndgrad" / "hub")
    monkeypatch.setenv("TORCH_HOME", "~/th")          # torch's variable, as torch reads it
    assert nh.get_dir() == os.path.expanduser("~/th/hub")
    monkeypatch.setattr(th, "_hub_dir", None)
    assert th.get_dir() == nh.get_dir()
    monkeypatch.setenv("NDGRAD_HOME", str(tmp_path / "nd"))
    assert nh.get_dir() == str(tmp_path / "nd" / "hub")
    nh.set_dir(pathlib.Path("~/elsewhere"))
    assert nh.get_dir() == os.path.expanduser("~/elsewhere")
    monkeypatch.setenv("TORCH_HUB", "x")
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated, please use env TORCH_HOME"):
        nh.get_dir()


def test_load_local(repo):
    assert nh.load(str(repo), "double", 4, scale=3, source="local") == 24
    assert nh.load(str(repo), "double", 4, source="LOCAL") == th.load(
        str(repo), "double", 4, source="local")
    assert str(repo) not in __import__("sys").path
    assert nh.list(str(repo), source="local") == ["double"]
    assert nh.help(str(repo), "double", source="local") == "Twice x (times scale)."


def test_load_local_errors_match_torch(repo, tmp_path):
    _both_raise(lambda h: h.load(str(repo), "not_callable", source="local"))
    _both_raise(lambda h: h.load(str(repo), "missing", source="local"))
    _both_raise(lambda h: h.load(str(repo), 3, source="local"))
    _both_raise(lambda h: h.load(str(repo), "double", source="svn"))
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / "hubconf.py").write_text("dependencies = ['numpy', 'no_such_pkg_a', 'no_such_b']\n"
                                     "def f():\n    return 1\n")
    _both_raise(lambda h: h.load(str(deps), "f", source="local"))
    _both_raise(lambda h: h.load(str(tmp_path / "nowhere"), "f", source="local"))


# ---- GitHub, served by a stand-in for urlopen ----

def _zip_of(repo_dir, top="owner-proj-abc123/"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(top, "")
        for p in sorted(repo_dir.iterdir()):
            z.writestr(top + p.name, p.read_bytes())
    return buf.getvalue()


def _response(url, body, ctype="application/octet-stream"):
    headers = email.message.Message()
    headers["Content-Length"] = str(len(body))
    headers["Content-Type"] = ctype
    return urllib.response.addinfourl(io.BytesIO(body), headers, url, 200)


class FakeGitHub:
    """Answers the URLs torch.hub reads: the default-branch probe, the branches/tags API and
    the zipball; records every URL asked for."""

    def __init__(self, archive, branches=("main",), has_main=True):
        self.archive, self.branches, self.has_main = archive, branches, has_main
        self.asked = []

    def __call__(self, req):
        url = req if isinstance(req, str) else req.full_url
        self.asked.append(url)
        if url.endswith("/tree/main/"):
            if not self.has_main:
                raise HTTPError(url, 404, "Not Found", {}, None)
            return _response(url, b"<html/>", "text/html")
        m = re.search(r"api\.github\.com/repos/[^/]+/[^/]+/(branches|tags)\?per_page=100"
                      r"&page=(\d+)", url)
        if m:
            items = [{"name": b, "commit": {"sha": "abc123" + b}} for b in self.branches]
            body = items if m.group(1) == "branches" and m.group(2) == "1" else []
            return _response(url, json.dumps(body).encode(), "application/json; charset=utf-8")
        if "/zipball/" in url:
            return _response(url, self.archive)
        raise AssertionError(f"unexpected URL {url}")


def _run(h, fn, monkeypatch, fake, capsys):
    monkeypatch.setattr(h, "urlopen", fake)
    out = fn(h)
    captured = capsys.readouterr()
    return out, captured.out, captured.err


def _same_output(t, n, thub, nhub):
    assert n[0] == t[0]
    assert n[1].replace(str(nhub), "HUB") == t[1].replace(str(thub), "HUB")
    assert n[2].replace(str(nhub), "HUB") == t[2].replace(str(thub), "HUB")


def test_github_download_list_help_load(repo, hub_dirs, monkeypatch, capsys):
    thub, nhub = hub_dirs
    fakes = {h: FakeGitHub(_zip_of(repo)) for h in (th, nh)}
    runs = [
        lambda h: h.list("owner/proj", trust_repo=True),
        lambda h: h.help("owner/proj", "double"),          # cached now
        lambda h: h.load("owner/proj", "double", 5, verbose=False),
        lambda h: h.load("owner/proj:main", "double", 1, force_reload=True),
    ]
    for fn in runs:
        t = _run(th, fn, monkeypatch, fakes[th], capsys)
        n = _run(nh, fn, monkeypatch, fakes[nh], capsys)
        _same_output(t, n, thub, nhub)
    assert fakes[nh].asked == fakes[th].asked
    assert sorted(os.listdir(nhub)) == sorted(os.listdir(thub)) == ["owner_proj_main",
                                                                    "trusted_list"]
    assert (nhub / "trusted_list").read_text() == (thub / "trusted_list").read_text()
    assert (nhub / "owner_proj_main" / "hubconf.py").read_text() == HUBCONF


def test_github_master_branch_and_fork_check(repo, hub_dirs, monkeypatch, capsys):
    thub, nhub = hub_dirs
    for h in (th, nh):
        fake = FakeGitHub(_zip_of(repo), branches=("master",), has_main=False)
        monkeypatch.setattr(h, "urlopen", fake)
        assert h.load("pytorch/proj", "double", 2) == 4        # a trusted owner: no prompt
        assert os.path.isdir(os.path.join(h.get_dir(), "pytorch_proj_master"))
    _both_raise(lambda h: h.list("pytorch/proj:fork-branch"))


def test_trust_prompt(repo, hub_dirs, monkeypatch, capsys):
    for answer in ("n", "", "maybe"):
        monkeypatch.setattr(builtins, "input", lambda prompt, a=answer: a)
        for h in (th, nh):
            monkeypatch.setattr(h, "urlopen", FakeGitHub(_zip_of(repo)))
        _both_raise(lambda h: h.list("someone/proj"))
    prompts = []
    monkeypatch.setattr(builtins, "input", lambda prompt: prompts.append(prompt) or "yes")
    monkeypatch.setattr(nh, "urlopen", FakeGitHub(_zip_of(repo)))
    assert nh.list("someone/proj") == ["double"]
    assert "The repository someone_proj does not belong to the list of trusted repositories" \
        in prompts[0]
    assert (hub_dirs[1] / "trusted_list").read_text() == "someone_proj\n"
    assert nh.list("someone/proj") == ["double"]               # trusted now: no prompt
    assert len(prompts) == 1


def test_unsafe_archive_refused(tmp_path, hub_dirs, monkeypatch):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("top/", "")
        z.writestr("top/../../evil.py", "x = 1")
    monkeypatch.setattr(nh, "urlopen", FakeGitHub(buf.getvalue()))
    with pytest.raises(ValueError, match="Archive entry contains directory traversal"):
        nh.load("pytorch/proj:main", "f", skip_validation=True)
    assert not (tmp_path / "evil.py").exists()


# ---- downloading files ----

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_dir(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Quiet(*a, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_url_to_file(http_dir, tmp_path, capsys):
    served, base = http_dir
    data = bytes(range(256)) * 1000
    (served / "blob.bin").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    dst = tmp_path / "out.bin"
    nh.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix=digest[:10],
                            progress=False)
    assert dst.read_bytes() == data and capsys.readouterr().err == ""
    nh.download_url_to_file((served / "blob.bin").as_uri(), str(dst), progress=True)
    assert dst.read_bytes() == data
    assert "100%" in capsys.readouterr().err                   # a progress bar on stderr
    dst.unlink()
    for h in (th, nh):
        with pytest.raises(RuntimeError, match=f'invalid hash value \\(expected "00ff", got '
                                               f'"{digest}"\\)'):
            h.download_url_to_file(f"{base}/blob.bin", str(dst), hash_prefix="00ff",
                                   progress=False)
    assert not dst.exists() and not list(tmp_path.glob("*.partial"))
    with pytest.raises(HTTPError, match="404"):
        nh.download_url_to_file(f"{base}/missing.bin", str(dst), progress=False)
    assert not list(tmp_path.glob("*.partial"))


def test_load_state_dict_from_url(http_dir, tmp_path, capsys):
    served, base = http_dir
    sd = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1, 2], dtype=torch.int64)}
    torch.save(sd, served / "net.pth")
    digest = hashlib.sha256((served / "net.pth").read_bytes()).hexdigest()
    named = f"net-{digest[:8]}.pth"
    (served / named).write_bytes((served / "net.pth").read_bytes())
    cache = tmp_path / "cache"

    got = nh.load_state_dict_from_url(f"{base}/{named}", model_dir=str(cache), progress=False,
                                      check_hash=True, weights_only=True,
                                      map_location="cpu")
    assert capsys.readouterr().out == f'Downloading: "{base}/{named}" to {cache / named}\n'
    assert isinstance(got["w"], ndgrad.Tensor) and got["b"].dtype == ndgrad.int64
    np.testing.assert_array_equal(got["w"].numpy(), sd["w"].numpy())
    (served / named).unlink()                                  # read from the cache now
    again = nh.load_state_dict_from_url(f"{base}/{named}", model_dir=str(cache),
                                        weights_only=True)
    assert capsys.readouterr().out == "" and again["w"].tolist() == got["w"].tolist()

    bad = "net-deadbeef.pth"
    (served / bad).write_bytes((served / "net.pth").read_bytes())
    for h in (th, nh):
        with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
            h.load_state_dict_from_url(f"{base}/{bad}", model_dir=str(tmp_path / h.__name__),
                                       check_hash=True, progress=False)
    got = nh.load_state_dict_from_url(f"{base}/{bad}", model_dir=str(cache),
                                      file_name="renamed.pt", weights_only=True,
                                      progress=False)
    assert (cache / "renamed.pt").exists() and got["b"].tolist() == [1, 2]


def test_load_state_dict_default_dir_and_map_location(http_dir, hub_dirs, capsys):
    served, base = http_dir
    ndgrad.save({"x": ndgrad.ones(2, dtype=ndgrad.float64)}, served / "x.pt")
    got = nh.load_state_dict_from_url(f"{base}/x.pt", weights_only=True, progress=False,
                                      map_location=lambda storage, loc: storage)
    assert (hub_dirs[1] / "checkpoints" / "x.pt").exists()
    assert got["x"].dtype == ndgrad.float64 and got["x"].tolist() == [1.0, 1.0]
    theirs = th.load_state_dict_from_url(f"{base}/x.pt", progress=False, weights_only=True)
    assert theirs["x"].tolist() == [1.0, 1.0]


def test_legacy_single_file_zip(http_dir, tmp_path):
    served, base = http_dir
    inner = tmp_path / "model.pt"
    ndgrad.save({"k": ndgrad.tensor([3.0])}, inner)
    with zipfile.ZipFile(served / "model.zip", "w") as z:
        z.write(inner, "model.pt")
    cache = tmp_path / "zcache"
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        got = nh.load_state_dict_from_url(f"{base}/model.zip", model_dir=str(cache),
                                          progress=False, weights_only=True)
    assert got["k"].tolist() == [3.0] and (cache / "model.pt").exists()


def test_attribute_access():
    assert ndgrad.hub is nh
    assert set(nh.__all__) == set(th.__all__)
