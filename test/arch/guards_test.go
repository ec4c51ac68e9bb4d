package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverySourceAndTargetHasItsGuard: a type that meets a part's
// contract says so at compile time with an interface guard (`var _
// source.Source = (*T)(nil)`, `var _ target.Target = (*T)(nil)`), so that
// a change of the contract fails where the part is, not where it is
// listed. A source is any type with the contract's two methods, Name()
// string and Run(ctx) error; a target is the type of any package under
// internal/fetcher/target/.
func TestEverySourceAndTargetHasItsGuard(t *testing.T) {
	for _, p := range packages(t) {
		if !production(p.ImportPath) || len(p.GoFiles) == 0 {
			continue
		}
		files := parsed(t, p)
		guarded := guards(files)
		for typ := range sources(files) {
			if !guarded["source.Source"][typ] && !(p.ImportPath == "internal/ingest/source" && typ == "Source") {
				t.Errorf("%s: %s meets internal/ingest/source.Source without a guard: var _ source.Source = (*%s)(nil)", p.ImportPath, typ, typ)
			}
		}
		if strings.HasPrefix(p.ImportPath, "internal/fetcher/target/") && len(guarded["target.Target"]) == 0 {
			t.Errorf("%s is a target without a guard: var _ target.Target = (*Target)(nil)", p.ImportPath)
		}
	}
}

// TestGuardsAreFound: the test above finds a source type, and its guard.
func TestGuardsAreFound(t *testing.T) {
	const src = `package x
type A struct{}
func (*A) Name() string { return "a" }
func (*A) Run(ctx context.Context) error { return nil }
type B struct{}
func (B) Name() string { return "b" }
func (B) Run(ctx context.Context) error { return nil }
var _ source.Source = B{}
type C struct{}
func (C) Run(ctx context.Context) {}
func (C) Name() string { return "c" }
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := []*ast.File{f}
	found, guarded := sources(files), guards(files)["source.Source"]
	if len(found) != 2 || !found["A"] || !found["B"] || guarded["A"] || !guarded["B"] {
		t.Errorf("sources %v, guarded %v: want A and B, B guarded", found, guarded)
	}
}

func parsed(t *testing.T, p pkg) []*ast.File {
	t.Helper()
	var files []*ast.File
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// sources are the types with the methods Name() string and
// Run(ctx) error.
func sources(files []*ast.File) map[string]bool {
	name, run := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			typ := recvType(fn.Recv.List[0].Type)
			params, results := fn.Type.Params.List, fn.Type.Results
			switch {
			case fn.Name.Name == "Name" && len(params) == 0 && results != nil && len(results.List) == 1 && types(results.List[0].Type) == "string":
				name[typ] = true
			case fn.Name.Name == "Run" && len(params) == 1 && types(params[0].Type) == "context.Context" &&
				results != nil && len(results.List) == 1 && types(results.List[0].Type) == "error":
				run[typ] = true
			}
		}
	}
	out := map[string]bool{}
	for typ := range name {
		if run[typ] {
			out[typ] = true
		}
	}
	return out
}

// guards are, by interface (source.Source, target.Target), the types the
// package's `var _ I = value` lines name.
func guards(files []*ast.File) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if len(v.Names) != 1 || v.Names[0].Name != "_" || v.Type == nil || len(v.Values) != 1 {
					continue
				}
				iface := types(v.Type)
				if out[iface] == nil {
					out[iface] = map[string]bool{}
				}
				out[iface][valueType(v.Values[0])] = true
			}
		}
	}
	return out
}

// recvType is a receiver's type name, without its pointer.
func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	return types(e)
}

// valueType is the type a guard's value is of: (*T)(nil), T{}, &T{}.
func valueType(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.CallExpr: // (*T)(nil)
		if p, ok := v.Fun.(*ast.ParenExpr); ok {
			return recvType(p.X)
		}
	case *ast.CompositeLit: // T{}
		return types(v.Type)
	case *ast.UnaryExpr: // &T{}
		return valueType(v.X)
	}
	return ""
}

// types is a type expression as written: T, pkg.T.
func types(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		return types(v.X) + "." + v.Sel.Name
	}
	return ""
}
