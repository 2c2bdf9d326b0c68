"""The PEP 517 build backend of mx and of every package under packages/:
meson-python, plus what lets each package install alone from a checkout.

The packages require each other at exact versions (``mx-engine==0.1.0``),
and the lower ones are not on any index while they are developed.  So,
when a package is built in a checkout (its siblings' source trees lie
beside it: ``packages/<name>``), the wheel this backend builds requires
them as direct references to those trees (``mx-engine @ file:///...``),
and ``pip install ./packages/mx-ndarray`` builds and installs mx-ops,
mx-storage and mx-engine from the same checkout.  At build time the
``.pxd`` files of the lower packages come from those trees as well (each
meson.build looks there), so nothing is installed for the build.

A build from an sdist (its PKG-INFO says so), or with
``-Cmx-release=true``, keeps the exact pins of pyproject.toml in the wheel,
as an index needs; from an sdist, the lower packages whose ``.pxd`` files
the build cimports (``[tool.mx] build-requires``) are build requirements,
installed from the index.

Every package holds this file as the symlink ``build_backend.py``
(``backend-path = ["."]``: PEP 517 loads a backend only from inside the
project); its sdist holds a copy.  The hooks run in the project directory.
"""
import base64
import hashlib
import io
import pathlib
import posixpath
import tarfile
import tomllib
import zipfile

import mesonpy
from mesonpy import get_requires_for_build_sdist
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

__all__ = ["get_requires_for_build_sdist", "get_requires_for_build_wheel",
           "get_requires_for_build_editable", "build_sdist", "build_wheel", "build_editable"]

# Our config setting (meson-python rejects options it does not know).
RELEASE = "mx-release"


def _pyproject(directory="."):
    with open(pathlib.Path(directory) / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _split_settings(config_settings):
    """(meson-python's settings, whether this is a release build)."""
    settings = dict(config_settings or {})
    value = str(settings.pop(RELEASE, "false")).lower()
    if value not in ("true", "false"):
        raise ValueError(f"-C{RELEASE}={value}: expected true or false")
    return settings, value == "true"


def sibling_trees(project=pathlib.Path(".")):
    """{canonical name: (source tree, version)} of the mx packages beside
    ``project`` in a checkout: the other ``packages/<name>`` seen from a
    package, all of them seen from the root.  A directory counts only if
    its pyproject.toml gives it its own name.  None from an unpacked sdist
    (the root's holds packages/ too): a build from an sdist is a release's."""
    project = project.resolve()
    if (project / "PKG-INFO").is_file():
        return {}
    if (project / "packages").is_dir():
        parent = project / "packages"
    elif project.parent.name == "packages":
        parent = project.parent
    else:
        return {}
    found = {}
    for tree in sorted(parent.iterdir()):
        if tree == project or not (tree / "pyproject.toml").is_file():
            continue
        meta = _pyproject(tree).get("project", {})
        if meta.get("name") == tree.name:
            found[canonicalize_name(tree.name)] = (tree, meta.get("version"))
    return found


def direct_reference(requirement, trees):
    """``requirement`` (a string) as a direct reference to its sibling's
    tree, or None when it has no sibling here.  The sibling's version must
    satisfy the pin: the checkout is one release."""
    req = Requirement(requirement)
    sibling = trees.get(canonicalize_name(req.name))
    if sibling is None:
        return None
    tree, version = sibling
    if not req.specifier.contains(version, prereleases=True):
        raise ValueError(f"{requirement!r} does not accept {tree} (version {version})")
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f" ; {req.marker}" if req.marker else ""
    # The trailing "/." keeps pip (before 26.2) from caching the wheel it
    # builds there under the URL and installing it again after the tree
    # changed: it caches trees whose name looks like name-version
    # (pypa/pip#13093, #14044).  The price: pip sees ./packages/mx-engine and
    # .../mx-engine/. as two URLs, so a command names one package and its
    # siblings come with it.
    return f"{req.name}{extras} @ {tree.as_uri()}/.{marker}"


# ---------------------------------------------------------------------------
# Build requirements
# ---------------------------------------------------------------------------
def _sibling_build_requires():
    """The lower packages the build cimports, when their trees are not
    beside (meson.build reads the trees when they are)."""
    wanted = _pyproject().get("tool", {}).get("mx", {}).get("build-requires", [])
    trees = sibling_trees()
    return [r for r in wanted if direct_reference(r, trees) is None]


def get_requires_for_build_wheel(config_settings=None):
    settings, _ = _split_settings(config_settings)
    return mesonpy.get_requires_for_build_wheel(settings) + _sibling_build_requires()


def get_requires_for_build_editable(config_settings=None):
    settings, _ = _split_settings(config_settings)
    return mesonpy.get_requires_for_build_editable(settings) + _sibling_build_requires()


# ---------------------------------------------------------------------------
# Wheels: meson-python's, with the sibling requirements rewritten
# ---------------------------------------------------------------------------
def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def localize_metadata(metadata, trees):
    """METADATA text with each Requires-Dist on a sibling turned into a
    direct reference to its tree.  Only the headers: the body after the
    first empty line is the README."""
    lines = metadata.split("\n")
    for i, line in enumerate(lines):
        if not line:
            break
        if line.startswith("Requires-Dist:"):
            local = direct_reference(line.partition(":")[2].strip(), trees)
            if local is not None:
                lines[i] = f"Requires-Dist: {local}"
    return "\n".join(lines)


def _rewrite_wheel(wheel, trees):
    """Rewrites the METADATA of ``wheel`` in place, and its RECORD line."""
    with zipfile.ZipFile(wheel) as zin:
        infos = zin.infolist()
        files = {info.filename: zin.read(info) for info in infos}
    (meta_name,) = [n for n in files if n.count("/") == 1
                    and n.endswith(".dist-info/METADATA")]
    record_name = meta_name.replace("/METADATA", "/RECORD")
    metadata = localize_metadata(files[meta_name].decode(), trees).encode()
    record = []
    for line in files[record_name].decode().splitlines():
        if line.startswith(meta_name + ","):
            line = f"{meta_name},{_record_hash(metadata)},{len(metadata)}"
        record.append(line)
    files[meta_name] = metadata
    files[record_name] = ("\n".join(record) + "\n").encode()
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as zout:
        for info in infos:
            zout.writestr(info, files[info.filename])
    tmp.replace(wheel)


def _localized(build, wheel_directory, config_settings, metadata_directory):
    settings, release = _split_settings(config_settings)
    name = build(wheel_directory, settings, metadata_directory)
    trees = {} if release else sibling_trees()
    if trees:
        _rewrite_wheel(pathlib.Path(wheel_directory) / name, trees)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _localized(mesonpy.build_wheel, wheel_directory, config_settings,
                      metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _localized(mesonpy.build_editable, wheel_directory, config_settings,
                      metadata_directory)


# ---------------------------------------------------------------------------
# sdists: meson-python's, plus this file where it dropped the symlink to it
# ---------------------------------------------------------------------------
def build_sdist(sdist_directory, config_settings=None):
    settings, _ = _split_settings(config_settings)
    name = mesonpy.build_sdist(sdist_directory, settings)
    sdist = pathlib.Path(sdist_directory) / name
    with tarfile.open(sdist) as tin:
        members = [(m, tin.extractfile(m).read() if m.isfile() else None)
                   for m in tin.getmembers()]
    top = members[0][0].name.split("/")[0]
    (backend_path,) = _pyproject()["build-system"]["backend-path"]
    path = posixpath.normpath(f"{top}/{backend_path}/build_backend.py")
    if any(member.name == path for member, _ in members):
        return name
    backend = tarfile.TarInfo(path)
    source = pathlib.Path(__file__).resolve().read_bytes()
    backend.size, backend.mode, backend.mtime = len(source), 0o644, members[0][0].mtime
    tmp = sdist.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tout:
        for member, data in members + [(backend, source)]:
            tout.addfile(member, None if data is None else io.BytesIO(data))
    tmp.replace(sdist)
    return name
