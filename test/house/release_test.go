package house

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// versions is versions.yaml: opentelemetry-go's multimod format.
type versions struct {
	ModuleSets map[string]struct {
		Version string   `yaml:"version"`
		Modules []string `yaml:"modules"`
	} `yaml:"module-sets"`
	ExcludedModules []string `yaml:"excluded-modules"`
}

// released maps each released module to its version.
func (v *versions) released() map[string]string {
	out := map[string]string{}
	for _, set := range v.ModuleSets {
		for _, m := range set.Modules {
			out[m] = set.Version
		}
	}
	return out
}

func readVersions(t *testing.T, root string) *versions {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "versions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v versions
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("versions.yaml: %v", err)
	}
	return &v
}

// goMod is what `go mod edit -json` says of a go.mod.
type goMod struct {
	Module  struct{ Path string }
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path string }
	}
}

// repoModules finds every go.mod of the repository (not the suite's or the
// tests' node_modules), by module path.
func repoModules(t *testing.T, root string) map[string]goMod {
	t.Helper()
	mods := map[string]goMod{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		out, err := exec.Command("go", "mod", "edit", "-json", p).Output()
		if err != nil {
			t.Fatalf("go mod edit -json %s: %v", p, err)
		}
		var m goMod
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		mods[m.Module.Path] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// What multimod's verify does, and what its prerelease would leave: every
// module of the repository is in versions.yaml, released or excluded, once;
// every require of a released module names its set's version; every such
// require has a replace to the checkout beside it, for development.
func TestVersionsYAMLNamesEveryModule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not installed")
	}
	root := repoRoot(t)
	v := readVersions(t, root)
	released := v.released()
	mods := repoModules(t, root)
	if len(released) == 0 {
		t.Fatal("versions.yaml releases no module")
	}
	for name, set := range v.ModuleSets {
		if !strings.HasPrefix(set.Version, "v") || strings.Count(set.Version, ".") != 2 {
			t.Errorf("module set %s: version %q is not a semantic version", name, set.Version)
		}
	}
	for m := range released {
		if slices.Contains(v.ExcludedModules, m) {
			t.Errorf("%s is both released and excluded", m)
		}
	}
	for path := range mods {
		if _, ok := released[path]; !ok && !slices.Contains(v.ExcludedModules, path) {
			t.Errorf("module %s is in neither a module set nor excluded-modules of versions.yaml", path)
		}
	}
	for path := range released {
		if _, ok := mods[path]; !ok {
			t.Errorf("versions.yaml releases %s, which is not a module of the repository", path)
		}
	}
	for path, m := range mods {
		for _, r := range m.Require {
			want, ok := released[r.Path]
			if !ok {
				if strings.HasPrefix(r.Path, rootModule) {
					t.Errorf("%s requires %s, which versions.yaml does not release", path, r.Path)
				}
				continue
			}
			if r.Version != want {
				t.Errorf("%s requires %s %s; versions.yaml releases it as %s", path, r.Path, r.Version, want)
			}
			if !slices.ContainsFunc(m.Replace, func(rp struct {
				Old struct{ Path string }
				New struct{ Path string }
			}) bool {
				return rp.Old.Path == r.Path && (strings.HasPrefix(rp.New.Path, "./") || strings.HasPrefix(rp.New.Path, "../"))
			}) {
				t.Errorf("%s requires %s without a replace to the checkout: development would build the released version", path, r.Path)
			}
		}
	}
}

// The release as a user meets it: the repository cloned bare and tagged as
// versions.yaml says ("v0.2.0" for the root, "otelmcp/v0.2.0"...), served
// where `go get` looks for it (git's url.insteadOf), with GOPRIVATE set
// and no workspace. Each released module, alone in a fresh module, is
// fetched with `go get module@version`, and a program importing every one
// of its public packages builds. The clone holds the checkout's tracked
// files as they are now (committed or not).
func TestEachReleasedModuleCanBeFetched(t *testing.T) {
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed, and this test runs it", tool)
		}
	}
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skipf("%s is not a git checkout (%v): the release is cut from one", root, err)
	}
	v := readVersions(t, root)
	work := t.TempDir()
	bare := filepath.Join(work, "repo.git")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}

	// The commit to release: the working tree's tracked files (stash
	// create makes one without touching the checkout; nothing to stash
	// means HEAD is the tree).
	commit := run(root, nil, "git", "stash", "create")
	if commit == "" {
		commit = run(root, nil, "git", "rev-parse", "HEAD")
	}
	run(work, nil, "git", "init", "-q", "--bare", bare)
	run(root, nil, "git", "push", "-q", bare, commit+":refs/heads/main")
	released := v.released()
	for mod, version := range released {
		tag := version
		if rel := strings.TrimPrefix(mod, rootModule); rel != "" {
			tag = strings.TrimPrefix(rel, "/") + "/" + version
		}
		run(bare, nil, "git", "tag", tag, commit)
	}

	gitConfig := filepath.Join(work, "gitconfig")
	cfg := "[url \"file://" + bare + "\"]\n\tinsteadOf = https://" + rootModule + "\n"
	if err := os.WriteFile(gitConfig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := run(root, nil, "go", "env", "GOMODCACHE")
	env := []string{
		// -trimpath: a module cache of its own would otherwise put every
		// dependency under a new path, which the build cache keys on, and
		// rebuild them all on every run.
		"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-modcacherw -trimpath",
		"GOPRIVATE=" + rootModule, "GOSUMDB=off",
		"GIT_CONFIG_GLOBAL=" + gitConfig, "GIT_CONFIG_NOSYSTEM=1",
		// A module cache of its own, so a release fetched before cannot
		// stand in for this one; every other module comes from the
		// machine's cache first, then the proxy.
		"GOMODCACHE=" + filepath.Join(work, "modcache"),
		"GOPROXY=file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download")) + "," + goEnv(t, "GOPROXY"),
	}

	for mod, version := range released {
		name := strings.TrimPrefix(strings.TrimPrefix(mod, rootModule), "/")
		if name == "" {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pkgs := publicPackages(t, root, mod)
			if len(pkgs) == 0 {
				t.Fatalf("%s has no public package", mod)
			}
			dir := t.TempDir()
			var main strings.Builder
			main.WriteString("package main\n\nimport (\n")
			for _, p := range pkgs {
				main.WriteString("\t_ \"" + p + "\"\n")
			}
			main.WriteString(")\n\nfunc main() {}\n")
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			run(dir, env, "go", "mod", "init", "example.com/user")
			run(dir, env, "go", "get", mod+"@"+version)
			run(dir, env, "go", "mod", "tidy")
			run(dir, env, "go", "build", "-o", os.DevNull, ".")
			got := run(dir, env, "go", "list", "-m", "-f", "{{.Version}}", mod)
			if got != version {
				t.Errorf("the user's module has %s %s; want %s", mod, got, version)
			}
		})
	}
}

// publicPackages lists mod's importable packages in the checkout: every
// package of the module but internal ones and commands.
func publicPackages(t *testing.T, root, mod string) []string {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(mod, rootModule), "/")))
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		p, name, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "main" || slices.Contains(strings.Split(p, "/"), "internal") {
			continue
		}
		pkgs = append(pkgs, path.Clean(p))
	}
	return pkgs
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}
