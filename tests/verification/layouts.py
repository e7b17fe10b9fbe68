"""Repositories laid out the way real monorepos are, with each ecosystem's real manifest and
lockfile formats (as pnpm 9, yarn 4, uv, Cargo and Go write them)."""
# ruff: noqa: E501  (lockfiles are kept exactly as the tools write them: integrity hashes and
# URLs make long lines)

from __future__ import annotations

import json

from verify_helpers import Files


def package_json(data: dict[str, object]) -> str:
    return json.dumps(data, indent=2) + "\n"


PNPM_LOCK = """\
lockfileVersion: '9.0'

settings:
  autoInstallPeers: true
  excludeLinksFromLockfile: false

importers:

  .:
    devDependencies:
      eslint:
        specifier: ^9.12.0
        version: 9.12.0
      vitest:
        specifier: ^2.1.3
        version: 2.1.3

  packages/cli:
    dependencies:
      '@acme/parser':
        specifier: workspace:*
        version: link:../parser

  packages/docs: {}

  packages/parser:
    dependencies:
      acorn:
        specifier: ^8.12.1
        version: 8.12.1

packages:

  acorn@8.12.1:
    resolution: {integrity: sha512-tcpGyI9zbizT9JbV6oYE477V6mTlXvvi0T0G3SNIYE2apm/G5huBa1+K89VGeovbg+jycCrfhl3ADxErOuO6Jg==}
    engines: {node: '>=0.4.0'}
    hasBin: true

  eslint@9.12.0:
    resolution: {integrity: sha512-IRkYFHWjfH4IGe2bTs+nj6yE3kwDb0fDzBvjIVkfyKFC6J0xQNh8AHZyJ8RZ16dmxDqzdnR0qBNiSlxHYh3AfA==}
    engines: {node: ^18.18.0 || ^20.9.0 || >=21.1.0}
    hasBin: true

  tinyspy@3.0.2:
    resolution: {integrity: sha512-n1cw8k1k0x4pgA2+9XrOkFydTerNcJ1zWCO5Nn9scWHTD+5tp8dghT2x1uduQePZTZgd3Tupf+x9BxJjeJi77Q==}
    engines: {node: '>=14.0.0'}

  vitest@2.1.3:
    resolution: {integrity: sha512-Zrxbg/WiIvUP2uEzelDNTXmEMJXuzJ1kCpbDvaKByFA9MNeO95V+7r/3ti0qzJzrxdyuUw5VduN7k+D3VmVOSA==}
    engines: {node: ^18.0.0 || >=20.0.0}
    hasBin: true

snapshots:

  acorn@8.12.1: {}

  eslint@9.12.0: {}

  tinyspy@3.0.2: {}

  vitest@2.1.3:
    dependencies:
      tinyspy: 3.0.2
"""


def pnpm_workspace() -> Files:
    """A pnpm workspace whose tests run from the root vitest config; the parser package keeps
    a fixture package.json under `__tests__`."""
    return {
        "package.json": package_json({
            "name": "acme", "private": True, "packageManager": "pnpm@9.12.0",
            "scripts": {"lint": "eslint .", "test": "vitest run"},
            "devDependencies": {"eslint": "^9.12.0", "vitest": "^2.1.3"},
        }),
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "pnpm-lock.yaml": PNPM_LOCK,
        "vitest.config.ts": (
            "import { defineConfig } from 'vitest/config'\n\n"
            "export default defineConfig({ test: { include: ['packages/*/__tests__/**'] } })\n"
        ),
        "eslint.config.js": "export default [];\n",
        "packages/parser/package.json": package_json({
            "name": "@acme/parser", "version": "1.0.0", "main": "src/index.ts",
            "scripts": {"build": "tsc -p ."}, "dependencies": {"acorn": "^8.12.1"},
        }),
        "packages/parser/src/index.ts": "export const parse = (s: string) => s.length;\n",
        "packages/parser/__tests__/parse.test.ts": (
            "import { test, expect } from 'vitest'\nimport { parse } from '../src'\n\n"
            "test('parse', () => expect(parse('ab')).toBe(2))\n"
        ),
        "packages/parser/__tests__/fixtures/basic/package.json": package_json({
            "name": "fixture-basic", "scripts": {"build": "exit 1", "test": "exit 1"},
        }),
        "packages/parser/__tests__/fixtures/basic/index.js": "module.exports = 1;\n",
        "packages/cli/package.json": package_json({
            "name": "@acme/cli", "version": "1.0.0",
            "scripts": {"lint": "eslint src", "test": "vitest run"},
            "dependencies": {"@acme/parser": "workspace:*"},
        }),
        "packages/cli/src/main.ts": "import { parse } from '@acme/parser'\nparse('x')\n",
        "packages/docs/package.json": package_json({
            "name": "@acme/docs", "private": True, "scripts": {"build": "vitepress build"},
        }),
        "packages/docs/index.md": "# Docs\n",
    }


UV_LOCK = """\
version = 1
revision = 1
requires-python = ">=3.11"

[manifest]
members = [
    "acme",
    "acme-cli",
    "acme-core",
    "acme-plugins",
]

[[package]]
name = "acme"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "acme-core" },
]

[package.dev-dependencies]
dev = [
    { name = "pytest" },
]

[package.metadata]
requires-dist = [{ name = "acme-core", editable = "packages/core" }]

[package.metadata.requires-dev]
dev = [{ name = "pytest", specifier = ">=8" }]

[[package]]
name = "acme-cli"
version = "0.1.0"
source = { editable = "packages/cli" }
dependencies = [
    { name = "click" },
]

[package.metadata]
requires-dist = [{ name = "click", specifier = ">=8.1" }]

[[package]]
name = "acme-core"
version = "0.1.0"
source = { editable = "packages/core" }

[[package]]
name = "acme-plugins"
version = "0.1.0"
source = { editable = "packages/plugins" }
dependencies = [
    { name = "acme-core" },
]

[package.metadata]
requires-dist = [{ name = "acme-core", editable = "packages/core" }]

[[package]]
name = "click"
version = "8.1.7"
source = { registry = "https://pypi.org/simple" }
sdist = { url = "https://files.pythonhosted.org/packages/96/d3/f04c7bfcf5c1862a2a5b845c6b2b360488cf47af55dfa79c98f6a6bf98b5/click-8.1.7.tar.gz", hash = "sha256:ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de", size = 336121 }
wheels = [
    { url = "https://files.pythonhosted.org/packages/00/2e/d53fa4befbf2cfa713304affc7ca780ce4fc1fd8710527771b58311a3229/click-8.1.7-py3-none-any.whl", hash = "sha256:ae74fb96c20a0277a1d615f1e4d73c8414f5a98db8b799a7931d1582f3390c28", size = 97941 },
]

[[package]]
name = "pytest"
version = "8.3.3"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "iniconfig" },
]
"""


def uv_workspace() -> Files:
    """A uv workspace: a root app with `tests/` run by `uv run pytest`, and three members."""
    def member(name: str, extra: str = "") -> str:
        return (f'[project]\nname = "{name}"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
                f"{extra}\n[build-system]\nrequires = [\"hatchling\"]\n"
                'build-backend = "hatchling.build"\n')

    core_source = '\n[tool.uv.sources]\nacme-core = { workspace = true }\n'
    return {
        "pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n'
            'dependencies = ["acme-core"]\n\n[dependency-groups]\ndev = ["pytest>=8"]\n\n'
            "[tool.uv.sources]\nacme-core = { workspace = true }\n\n"
            '[tool.uv.workspace]\nmembers = ["packages/*"]\n\n'
            '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n'
            "[tool.ruff]\nline-length = 100\n"
        ),
        "uv.lock": UV_LOCK,
        ".python-version": "3.12\n",
        "src/acme/__init__.py": "from acme_core import VERSION\n",
        "tests/test_app.py": "def test_app():\n    import acme  # noqa: F401\n",
        "packages/core/pyproject.toml": member("acme-core"),
        "packages/core/src/acme_core/__init__.py": "VERSION = 1\n",
        "packages/core/tests/test_core.py": "def test_version():\n    assert True\n",
        "packages/plugins/pyproject.toml": member(
            "acme-plugins", 'dependencies = ["acme-core"]\n' + core_source),
        "packages/plugins/src/acme_plugins/__init__.py": "from acme_core import VERSION\n",
        "packages/cli/pyproject.toml": member("acme-cli", 'dependencies = ["click>=8.1"]\n'),
        "packages/cli/src/acme_cli/__init__.py": "import click\n",
        "packages/cli/tests/test_cli.py": "def test_cli():\n    assert True\n",
    }


def go_modules() -> Files:
    """A Go repository of several modules and no go.work, pointing at each other with
    `replace` the way opentelemetry-go's do (a `replace` of every sibling, required or not),
    and a module fixture under `testdata/`."""
    pseudo = "v0.0.0-00010101000000-000000000000"
    return {
        "go.mod": "module example.com/acme\n\ngo 1.22\n",
        "acme.go": "package acme\n\nconst Name = \"acme\"\n",
        "lib/go.mod": (
            f"module example.com/acme/lib\n\ngo 1.22\n\nrequire example.com/acme {pseudo}\n\n"
            "replace example.com/acme => ../\n"
        ),
        "lib/lib.go": "package lib\n",
        "tools/gen/go.mod": (
            "module example.com/acme/tools/gen\n\ngo 1.22\n\n"
            f"require (\n\texample.com/acme {pseudo}\n\tgolang.org/x/tools v0.26.0\n)\n\n"
            "replace example.com/acme => ../..\n"
        ),
        "tools/gen/main.go": "package main\n\nfunc main() {}\n",
        "services/api/go.mod": (
            "module example.com/acme/services/api\n\ngo 1.22\n\n"
            f"require example.com/acme/lib {pseudo}\n\n"
            "replace example.com/acme/lib => ../../lib // local copy\n"
        ),
        "services/api/main.go": "package main\n\nfunc main() {}\n",
        # The published lib, not the repository's: no go.work, no replace.
        "services/worker/go.mod": (
            "module example.com/acme/services/worker\n\ngo 1.22\n\n"
            "require example.com/acme/lib v0.3.0\n"
        ),
        "services/worker/main.go": "package main\n\nfunc main() {}\n",
        # Replaces lib and the root but requires neither: the replacements do nothing.
        "services/stats/go.mod": (
            "module example.com/acme/services/stats\n\ngo 1.22\n\n"
            "require github.com/stretchr/testify v1.9.0\n\n"
            "replace (\n\texample.com/acme => ../..\n\texample.com/acme/lib => ../../lib\n)\n"
        ),
        "services/stats/main.go": "package main\n\nfunc main() {}\n",
        "billing/go.mod": "module example.com/billing\n\ngo 1.22\n",
        "billing/billing.go": "package billing\n",
        # A module the tests of the root package build: never a module of the repository.
        "testdata/plugin/go.mod": "module example.com/plugin\n\ngo 1.22\n",
        "testdata/plugin/plugin.go": "package plugin\n",
    }


def go_workspace() -> Files:
    """The same modules used together by a go.work (prometheus' layout): `require` links the
    modules it uses; a module it does not use is not one of the workspace's."""
    return {
        **go_modules(),
        "go.work": "go 1.22\n\nuse (\n\t.\n\t./lib\n\t./services/worker\n)\n",
    }


YARN_LOCK = """\
# This file is generated by running "yarn install" inside your project.
# Manual changes might be lost - proceed with caution!

__metadata:
  version: 8
  cacheKey: 10c0

"@acme/utils@workspace:^, @acme/utils@workspace:packages/utils":
  version: 0.0.0-use.local
  resolution: "@acme/utils@workspace:packages/utils"
  dependencies:
    semver: "npm:^7.6.3"
  languageName: unknown
  linkType: soft

"create-acme-monorepo@workspace:.":
  version: 0.0.0-use.local
  resolution: "create-acme-monorepo@workspace:."
  languageName: unknown
  linkType: soft

"create-acme@workspace:packages/create-acme":
  version: 0.0.0-use.local
  resolution: "create-acme@workspace:packages/create-acme"
  dependencies:
    "@acme/utils": "workspace:^"
  bin:
    create-acme: ./index.js
  languageName: unknown
  linkType: soft

"semver@npm:^7.6.3":
  version: 7.6.3
  resolution: "semver@npm:7.6.3"
  bin:
    semver: bin/semver.js
  checksum: 10c0/88f33e148b210c153873cb08cfe1e281d518aaa9a666d4d148add6560db5cd3c582f3a08ccb91f38d5f379ead256da9931234ed122057f40bb5766e65e58adaf
  languageName: node
  linkType: hard
"""


def yarn_workspace() -> Files:
    """A yarn 4 workspace whose `create-acme` package ships a project template folder."""
    return {
        "package.json": package_json({
            "name": "create-acme-monorepo", "private": True, "packageManager": "yarn@4.5.0",
            "workspaces": ["packages/*"], "scripts": {"lint": "eslint ."},
        }),
        ".yarnrc.yml": "nodeLinker: node-modules\n",
        "yarn.lock": YARN_LOCK,
        "packages/create-acme/package.json": package_json({
            "name": "create-acme", "version": "1.0.0", "bin": {"create-acme": "./index.js"},
            "scripts": {"test": "node --test", "build": "tsc"},
            "dependencies": {"@acme/utils": "workspace:^"},
        }),
        "packages/create-acme/index.js": "#!/usr/bin/env node\nrequire('@acme/utils');\n",
        "packages/create-acme/template/package.json": package_json({
            "name": "my-app", "private": True,
            "scripts": {"build": "vite build", "lint": "eslint .", "test": "vitest"},
            "dependencies": {"react": "^18.3.1"},
        }),
        "packages/create-acme/template/src/App.jsx": "export default () => null;\n",
        "packages/utils/package.json": package_json({
            "name": "@acme/utils", "version": "1.0.0", "scripts": {"test": "node --test"},
            "dependencies": {"semver": "^7.6.3"},
        }),
        "packages/utils/index.js": "module.exports = require('semver');\n",
    }


def cargo_workspace() -> Files:
    """A Cargo workspace with maturin bindings at the root, a linter crate whose fixtures
    include a Python project and deliberately broken Python, and two unrelated projects."""
    fixtures = "crates/acme_linter/resources/test/fixtures"
    return {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\nresolver = "2"\n',
        "Cargo.lock": (
            "# This file is automatically @generated by Cargo.\n# It is not intended for manual "
            "editing.\nversion = 3\n\n[[package]]\nname = \"acme_linter\"\nversion = \"0.1.0\"\n"
            "\n[[package]]\nname = \"acme_py\"\nversion = \"0.1.0\"\ndependencies = [\n"
            ' "acme_linter",\n]\n'
        ),
        "pyproject.toml": (
            '[build-system]\nrequires = ["maturin>=1.5,<2.0"]\nbuild-backend = "maturin"\n\n'
            '[project]\nname = "acme"\nrequires-python = ">=3.9"\n\n'
            '[tool.maturin]\nmanifest-path = "crates/acme_py/Cargo.toml"\n'
        ),
        "crates/acme_linter/Cargo.toml": (
            '[package]\nname = "acme_linter"\nversion = "0.1.0"\nedition = "2021"\n'
        ),
        "crates/acme_linter/src/lib.rs": "pub fn lint() {}\n",
        f"{fixtures}/pyproject.toml": '[project]\nname = "fixture"\n[tool.ruff]\nselect = ["E"]\n',
        f"{fixtures}/test_broken.py": "def test_(:\n    pass\n",
        f"{fixtures}/E501.md": "# a Markdown input of the linter's tests\n",
        "crates/acme_py/Cargo.toml": (
            '[package]\nname = "acme_py"\nversion = "0.1.0"\nedition = "2021"\n\n'
            '[dependencies]\nacme_linter = { path = "../acme_linter" }\n'
        ),
        "crates/acme_py/src/lib.rs": "pub fn bind() {}\n",
        "editors/vscode/package.json": package_json({
            "name": "acme-vscode", "scripts": {"test": "node --test"},
        }),
        "editors/vscode/extension.js": "module.exports = {};\n",
        "scripts/pyproject.toml": '[project]\nname = "scripts"\n\n[tool.ruff]\nline-length = 100\n',
        "scripts/release.py": "print('release')\n",
    }


def cargo_package(name: str, tables: str = "", *, version: str = "0.0.0") -> str:
    """A crate's Cargo.toml: its `[package]`, then `tables` as written."""
    return f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n{tables}'


def cargo_monorepo() -> Files:
    """A virtual Cargo workspace laid out like rust-analyzer's and deno's: crates inheriting
    path dependencies from `[workspace.dependencies]`, a member only by being a path
    dependency (deno's `ext/os`), a crate nobody lists (deno's `ext/broadcast_channel`), an
    excluded crate, a benchmark crate with its own `[workspace]`, a cargo-fuzz harness, a
    dev-only dependency, a fixture crate with its own `[workspace]` under `tests/`, and the
    parser's test data."""
    crate = cargo_package
    return {
        "Cargo.toml": (
            '[workspace]\nmembers = ["xtask/", "crates/*"]\nexclude = ["crates/imp"]\n'
            'resolver = "2"\n\n[workspace.dependencies]\n'
            'parser = { path = "./crates/parser", version = "0.0.0" }\n'
            'syntax = { path = "./crates/syntax", version = "0.0.0" }\n'
            'ide = { path = "./crates/ide", version = "0.0.0" }\n'
            'acme_os = { path = "./ext/os", version = "0.0.0" }\n'
            'broadcast = { path = "./ext/broadcast", version = "0.0.0" }\n'
            'serde = { version = "1.0.210", features = ["derive"] }\n'
        ),
        "Cargo.lock": "# This file is automatically @generated by Cargo.\nversion = 4\n",
        "crates/parser/Cargo.toml": crate("parser"),
        "crates/parser/src/lib.rs": "pub fn parse() {}\n",
        "crates/parser/test_data/ok/0001_fn.rs": "fn main() {}\n",
        "crates/syntax/Cargo.toml": crate(
            "syntax", "\n[dependencies]\nparser.workspace = true\nserde.workspace = true\n"),
        "crates/syntax/src/lib.rs": "pub use parser::parse;\n",
        "crates/syntax/bench/Cargo.toml": crate(
            "syntax-bench", '\n[dependencies]\nsyntax = { path = ".." }\n\n[workspace]\n'
            'members = ["."]\n'),
        "crates/syntax/bench/src/main.rs": "fn main() {}\n",
        # cargo-fuzz's harness (its template's metadata and workspace): `cargo fuzz` builds it
        # on nightly, no pull request check does.
        "crates/syntax/fuzz/Cargo.toml": crate(
            "syntax-fuzz", '\n[package.metadata]\ncargo-fuzz = true\n\n[dependencies]\n'
            'syntax = { path = ".." }\nlibfuzzer-sys = "0.4"\n\n[workspace]\nmembers = ["."]\n'),
        "crates/syntax/fuzz/fuzz_targets/parser.rs": "fn main() {}\n",
        "crates/ide/Cargo.toml": crate(
            "ide", "\n[dependencies]\nsyntax = { workspace = true }\n\n[dev-dependencies]\n"
            'test-utils = { path = "../test-utils" }\n'),
        "crates/ide/src/lib.rs": "pub fn hover() {}\n",
        "crates/ide/tests/hover.rs": "#[test]\nfn hover() {}\n",
        "crates/test-utils/Cargo.toml": crate("test-utils"),
        "crates/test-utils/src/lib.rs": "pub fn fixture() {}\n",
        "crates/cli/Cargo.toml": crate(
            "cli", "\n[dependencies]\nide.workspace = true\nacme_os.workspace = true\n"),
        "crates/cli/src/main.rs": "fn main() {}\n",
        "crates/imp/Cargo.toml": crate("imp"),
        "crates/imp/src/lib.rs": "pub fn imp() {}\n",
        "ext/os/Cargo.toml": crate("acme_os"),
        "ext/os/lib.rs": "pub fn os() {}\n",
        "ext/broadcast/Cargo.toml": crate("broadcast"),
        "ext/broadcast/lib.rs": "pub fn broadcast() {}\n",
        "xtask/Cargo.toml": crate("xtask"),
        "xtask/src/main.rs": "fn main() {}\n",
        "tests/specs/pipe/Cargo.toml": crate("test-pipe", "\n[workspace]\n"),
        "tests/specs/pipe/src/main.rs": "fn main() {}\n",
    }


def maturin_workspace() -> Files:
    """A uv workspace whose member is built from its own crate by maturin, as pydantic's
    `pydantic-core` is (the root on pytest 9's `[tool.pytest]`)."""
    return {
        "pyproject.toml": (
            '[project]\nname = "pydantic"\nversion = "2.13.0"\nrequires-python = ">=3.10"\n'
            'dependencies = ["pydantic-core==2.46.0"]\n\n[dependency-groups]\n'
            'dev = ["pytest>=8", "ruff"]\n\n[tool.uv.sources]\n'
            "pydantic-core = { workspace = true }\n\n"
            '[tool.uv.workspace]\nmembers = ["pydantic-core"]\n\n'
            "[tool.pytest]\ntestpaths = ['tests']\nstrict = true\n"
        ),
        "uv.lock": "version = 1\nrevision = 3\nrequires-python = \">=3.10\"\n",
        "pydantic/main.py": "from pydantic_core import validate\n",
        "tests/test_main.py": "def test_main():\n    import pydantic.main  # noqa: F401\n",
        "pydantic-core/pyproject.toml": (
            "[build-system]\nrequires = ['maturin>=1.13.3,<2']\nbuild-backend = 'maturin'\n\n"
            "[project]\nname = 'pydantic_core'\nversion = '2.46.0'\n"
            "requires-python = '>=3.10'\n\n[tool.maturin]\npython-source = \"python\"\n"
            'module-name = "pydantic_core._pydantic_core"\n\n'
            "[tool.pytest.ini_options]\ntestpaths = 'tests'\n"
        ),
        "pydantic-core/Cargo.toml": (
            '[package]\nname = "pydantic-core"\nversion = "2.46.0"\nedition = "2021"\n\n'
            '[lib]\nname = "_pydantic_core"\ncrate-type = ["cdylib", "rlib"]\n\n'
            '[dependencies]\npyo3 = { version = "0.26", features = ["generate-import-lib"] }\n'
        ),
        "pydantic-core/Cargo.lock": "version = 4\n",
        "pydantic-core/src/lib.rs": "pub fn validate() {}\n",
        "pydantic-core/python/pydantic_core/__init__.py": "def validate(): ...\n",
        "pydantic-core/tests/test_validators.py": "def test_validate():\n    assert True\n",
    }


def npm_workspace() -> Files:
    """An npm workspace (package-lock v3) whose root `test` runs every member's, and members
    depending on each other by plain ranges: linked where the member's version satisfies the
    range, installed from the registry where it does not (an app pinned to an old release)."""
    lock = {
        "name": "acme", "lockfileVersion": 3, "requires": True,
        "packages": {
            "": {"name": "acme", "workspaces": ["packages/*"],
                 "devDependencies": {"@acme/utils": "^1.0.0", "eslint": "^9.12.0"}},
            "node_modules/@acme/app": {"resolved": "packages/app", "link": True},
            "node_modules/@acme/demo": {"resolved": "packages/demo", "link": True},
            "node_modules/@acme/legacy-app": {"resolved": "packages/legacy-app", "link": True},
            "node_modules/@acme/utils": {"resolved": "packages/utils", "link": True},
            "packages/legacy-app/node_modules/@acme/utils": {
                "version": "0.9.4",
                "resolved": "https://registry.npmjs.org/@acme/utils/-/utils-0.9.4.tgz",
                "integrity": "sha512-0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000==",
            },
            "packages/utils": {"name": "@acme/utils", "version": "1.2.0"},
        },
    }  # fmt: skip

    def member(name: str, dependencies: dict[str, str] | None = None) -> str:
        return package_json({"name": f"@acme/{name}", "version": "1.2.0",
                             "scripts": {"test": "node --test"},
                             **({"dependencies": dependencies} if dependencies else {})})

    return {
        "package.json": package_json({
            "name": "acme", "private": True, "workspaces": ["packages/*"],
            "scripts": {"lint": "eslint .", "test": "npm run test --workspaces --if-present"},
            "devDependencies": {"@acme/utils": "^1.0.0", "eslint": "^9.12.0"},
        }),
        "package-lock.json": json.dumps(lock, indent=2) + "\n",
        "scripts/release.js": "console.log('release');\n",
        "packages/utils/package.json": member("utils"),
        "packages/utils/index.js": "module.exports = {};\n",
        "packages/app/package.json": member("app", {"@acme/utils": "^1.0.0"}),
        "packages/app/index.js": "require('@acme/utils');\n",
        "packages/demo/package.json": member("demo", {"@acme/utils": "*"}),
        "packages/demo/index.js": "require('@acme/utils');\n",
        "packages/legacy-app/package.json": member("legacy-app", {"@acme/utils": "^0.9.0"}),
        "packages/legacy-app/index.js": "require('@acme/utils');\n",
    }


def polars_layout() -> Files:
    """polars' shape: a Python package (setuptools) pinning a runtime package that maturin
    builds from a crate of the Cargo workspace, with its version from that crate."""
    def crate(name: str, tables: str = "") -> str:
        return cargo_package(name, tables, version="1.43.2")

    return {
        "Cargo.toml": (
            '[workspace]\nmembers = ["crates/*", "py-polars/runtime/polars-runtime-32"]\n'
            'resolver = "2"\n\n[workspace.dependencies]\n'
            'polars-core = { version = "0.53.0", path = "crates/polars-core" }\n'
            'polars-python = { version = "0.53.0", path = "crates/polars-python" }\n'),
        "Cargo.lock": "version = 4\n",
        "crates/polars-core/Cargo.toml": crate("polars-core"),
        "crates/polars-core/src/lib.rs": "pub fn core() {}\n",
        "crates/polars-python/Cargo.toml": crate(
            "polars-python", "\n[dependencies]\npolars-core = { workspace = true }\n"),
        "crates/polars-python/src/lib.rs": "pub fn python() {}\n",
        "crates/polars-tools/Cargo.toml": crate("polars-tools"),
        "crates/polars-tools/src/main.rs": "fn main() {}\n",
        "py-polars/runtime/polars-runtime-32/Cargo.toml": crate(
            "polars-runtime-32", '\n[lib]\nname = "_polars_runtime"\ncrate-type = ["cdylib"]\n\n'
            '[dependencies]\npolars-python = { workspace = true, features = ["rt32"] }\n'),
        "py-polars/runtime/polars-runtime-32/pyproject.toml": (
            '[build-system]\nrequires = ["maturin>=1.3.2"]\nbuild-backend = "maturin"\n\n'
            '[project]\nname = "polars-runtime-32"\nrequires-python = ">=3.10"\n'
            'dynamic = ["version"]\n\n[tool.maturin]\nmodule-name = '
            '"_polars_runtime_32._polars_runtime"\n'),
        "py-polars/runtime/polars-runtime-32/src/lib.rs": "pub fn init() {}\n",
        "py-polars/pyproject.toml": (
            '[build-system]\nrequires = ["setuptools>=61"]\n'
            'build-backend = "setuptools.build_meta"\n\n[project]\nname = "polars"\n'
            'version = "1.43.2"\ndependencies = ["polars-runtime-32 == 1.43.2"]\n\n'
            "[tool.pytest.ini_options]\ntestpaths = ['tests']\n"),
        "py-polars/src/polars/__init__.py": "import _polars_runtime_32\n",
        "py-polars/tests/unit/test_frame.py": "def test_frame():\n    assert True\n",
        # The docs pin an older release: a published polars, not the repository's.
        "docs/source/pyproject.toml": (
            '[project]\nname = "polars-docs"\nversion = "0.0.0"\n'
            'dependencies = ["polars-runtime-32 >= 1.30"]\n'),
        "docs/source/tests/test_examples.py": "def test_examples():\n    assert True\n",
    }
