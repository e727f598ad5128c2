package intake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoHiddenNondeterminism: the simulator runs Service unmodified, so the
// package may not start goroutines, read the real clock or use a random
// source. Concurrency reaches it only from outside (net/http's goroutines).
func TestNoHiddenNondeterminism(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{
		"time.Now": true, "time.Since": true, "time.Until": true, "time.Sleep": true,
		"time.After": true, "time.AfterFunc": true, "time.Tick": true,
		"time.NewTimer": true, "time.NewTicker": true,
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "math/rand") || path == "crypto/rand" {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok && banned[pkg.Name+"."+n.Sel.Name] {
					t.Errorf("%s: %s.%s", fset.Position(n.Pos()), pkg.Name, n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
