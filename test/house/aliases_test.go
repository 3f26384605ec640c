package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// contractAliases are the names package client keeps as aliases of
// client/observe, client/store and auth: those the design's api.md names in
// package client. Every other name of those packages is imported from its
// own (issue 45, v0.2.0).
var contractAliases = []string{
	"State", "Idle", "Connecting", "Ready", "Degraded", "Reconnecting", "Closed",
	"Observer",
	"OAuthConfig", "GrantType", "GrantAuthorizationCode", "GrantClientCredentials", "GrantJWTBearer",
	"InsufficientScopeError",
	"TaskStore", "PendingTask",
}

// Package client declares no alias (a type alias, or a constant or
// variable that is another package's) of client/observe, client/store or
// auth but the contract's.
func TestClientKeepsOnlyTheContractsAliases(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	aliased := map[string]bool{rootModule + "/client/observe": true, rootModule + "/client/store": true, rootModule + "/auth": true}
	fset := token.NewFileSet()
	var kept []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imported := map[string]bool{} // names of the aliased packages in this file
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !aliased[p] {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			imported[local] = true
		}
		isAliased := func(e ast.Expr) bool {
			if g, ok := e.(*ast.IndexExpr); ok {
				e = g.X
			}
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return false
			}
			pkg, ok := sel.X.(*ast.Ident)
			return ok && imported[pkg.Name]
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && s.Name.IsExported() && isAliased(s.Type) {
						kept = append(kept, s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if n.IsExported() && i < len(s.Values) && isAliased(s.Values[i]) {
							kept = append(kept, n.Name)
						}
					}
				}
			}
		}
	}
	for _, name := range kept {
		if !slices.Contains(contractAliases, name) {
			t.Errorf("client.%s is an alias of another package's name that api.md does not name in client: users import it from its package", name)
		}
	}
	for _, name := range contractAliases {
		if !slices.Contains(kept, name) {
			t.Errorf("client.%s, which api.md names in client, is not an alias any more (a type of client's own, or gone?)", name)
		}
	}
}
