package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// bump makes version the release every module requires its siblings at:
// the go.mod files, go.work's replace directives and VERSION.
func bump(r *repo, version string) error {
	if !validVersion(version) {
		return fmt.Errorf("%q is not a release version vX.Y.Z", version)
	}
	for _, m := range r.modules {
		path := filepath.Join(r.root, filepath.FromSlash(m.Dir), "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(path, data, nil)
		if err != nil {
			return err
		}
		for _, req := range f.Require {
			if r.isSibling(req.Mod.Path) {
				if err := f.AddRequire(req.Mod.Path, version); err != nil {
					return err
				}
			}
		}
		for _, rep := range f.Replace {
			if r.isSibling(rep.Old.Path) {
				return fmt.Errorf("%s replaces %s: siblings resolve through go.work alone", m.Dir, rep.Old.Path)
			}
		}
		out, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
	}
	if err := bumpWork(r, version); err != nil {
		return err
	}
	r.version = version
	return os.WriteFile(filepath.Join(r.root, "VERSION"), []byte(version+"\n"), 0o644)
}

// bumpWork points go.work's replace directives at version.
func bumpWork(r *repo, version string) error {
	path := filepath.Join(r.root, "go.work")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w, err := modfile.ParseWork(path, data, nil)
	if err != nil {
		return err
	}
	for _, rep := range w.Replace {
		if r.isSibling(rep.Old.Path) {
			if err := w.DropReplace(rep.Old.Path, rep.Old.Version); err != nil {
				return err
			}
			if err := w.AddReplace(rep.Old.Path, version, rep.New.Path, ""); err != nil {
				return err
			}
		}
	}
	w.Cleanup()
	return os.WriteFile(path, modfile.Format(w.Syntax), 0o644)
}

// tidy runs go mod tidy in every module, outside the workspace, with the
// siblings served at the current version by a proxy made from the tree.
// Their go.sum lines are then dropped: they are hashes of the tree, not of
// tags, and the go command needs none of them (inside the workspace the
// siblings are the tree; outside, they come with their own checksums from
// the module proxy and the checksum database).
func tidy(r *repo) error {
	dir, err := os.MkdirTemp("", "zerotal-release-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	proxy, home := filepath.Join(dir, "proxy"), filepath.Join(dir, "home")
	if err := writeProxy(r, proxy); err != nil {
		return err
	}
	env := isolatedEnv(proxy, home)
	defer cleanModcache(env, home)
	for _, m := range r.modules {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = filepath.Join(r.root, filepath.FromSlash(m.Dir))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %v\n%s", m.Dir, err, out)
		}
		if err := dropSiblingSums(r, filepath.Join(cmd.Dir, "go.sum")); err != nil {
			return err
		}
	}
	return nil
}

// isolatedEnv is outsideEnv with a GOPATH and a module cache of its own
// under home. The shared cache never changes a module it holds, so once it
// has a sibling at the current version, it would go on serving that copy
// however the tree changed (a package added since, say); the private cache
// takes each sibling from the tree's proxy. The shared cache's downloads
// still serve every other module, ahead of the network.
func isolatedEnv(proxyDir, home string) []string {
	env := outsideEnv(proxyDir)
	out, _ := exec.Command("go", "env", "GOMODCACHE").Output()
	if shared := strings.TrimSpace(string(out)); shared != "" {
		for i := len(env) - 1; i >= 0; i-- { // the last GOPROXY is the one the go command reads
			if v, ok := strings.CutPrefix(env[i], "GOPROXY="); ok {
				first, rest, _ := strings.Cut(v, ",")
				env[i] = "GOPROXY=" + first + "," + proxyURL(filepath.Join(shared, "cache", "download")) + "," + rest
				break
			}
		}
	}
	return append(env, "GOPATH="+filepath.Join(home, "gopath"), "GOMODCACHE="+filepath.Join(home, "modcache"))
}

// cleanModcache empties the private module cache of env, whose files the go
// command makes read-only, so that home can be removed.
func cleanModcache(env []string, home string) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return
	}
	cmd := exec.Command("go", "clean", "-modcache")
	cmd.Dir, cmd.Env = home, env
	_ = cmd.Run()
}

// outsideEnv is the environment of a go command that sees the repository as
// a user would: no workspace, the siblings from the proxy in dir (and no
// checksum database for them: they are not published), everything else
// from the usual proxies.
func outsideEnv(dir string) []string {
	proxies := os.Getenv("GOPROXY")
	if proxies == "" {
		out, _ := exec.Command("go", "env", "GOPROXY").Output()
		proxies = strings.TrimSpace(string(out))
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GOPROXY="+proxyURL(dir)+","+proxies,
		"GONOSUMDB="+strings.TrimSuffix(modulePrefix, "/"),
	)
}

// dropSiblingSums removes the lines of sibling modules from a go.sum.
func dropSiblingSums(r *repo, path string) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(data), "\n") {
		mod, _, _ := strings.Cut(line, " ")
		if !r.isSibling(mod) {
			out.WriteString(line)
		}
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
