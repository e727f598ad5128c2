package sluice_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoreIsDeterministic scans the non-test sources of everything that runs
// under the simulator (sluice, and the simulator's own sim, model and
// scenarios) for the holes in determinism it cannot see through: real time,
// global randomness, goroutines and select. The core must take all of these
// as injected dependencies. The HTTP handler is the one real-time adapter,
// and it needs none of them either.
func TestCoreIsDeterministic(t *testing.T) {
	banned := map[string]map[string]bool{
		"time": {"Now": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true,
			"NewTimer": true, "NewTicker": true, "Since": true, "Until": true},
	}
	// math/rand/v2's package-level functions use a global, randomly seeded
	// source; only rand.New with an explicit source is allowed.
	randAllowed := map[string]bool{"New": true, "NewPCG": true, "NewChaCha8": true, "Rand": true, "PCG": true, "ChaCha8": true, "Source": true}

	fset := token.NewFileSet()
	checked := 0
	var err error
	for _, root := range []string{".", "../sim", "../model", "../scenarios"} {
		err = errors.Join(err, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			checked++
			names := map[string]string{} // local import name -> import path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == "math/rand" {
					t.Errorf("%s imports math/rand (global source); inject a Rand", path)
				}
				name := p[strings.LastIndex(p, "/")+1:]
				if p == "math/rand/v2" {
					name = "rand"
				}
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = p
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: go statement in core code", fset.Position(n.Pos()))
				case *ast.SelectStmt:
					t.Errorf("%s: select statement in core code", fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if !ok {
						break
					}
					switch names[id.Name] {
					case "time":
						if banned["time"][n.Sel.Name] {
							t.Errorf("%s: time.%s reads the real clock; use the injected Clock", fset.Position(n.Pos()), n.Sel.Name)
						}
					case "math/rand/v2":
						if !randAllowed[n.Sel.Name] {
							t.Errorf("%s: rand.%s uses the global source; use the injected Rand", fset.Position(n.Pos()), n.Sel.Name)
						}
					}
				}
				return true
			})
			return nil
		}))
	}
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("scanned only %d files; is the walk rooted right?", checked)
	}
}
