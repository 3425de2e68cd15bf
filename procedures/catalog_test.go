package procedures

import (
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/procedures/schema"
)

// TestCatalog checks that the catalogue lists every built-in with its registry entry's
// flags and doc, and describes its types as schema.Of does.
func TestCatalog(t *testing.T) {
	r := Builtins()
	list := r.List()
	cat := r.Catalog()
	if len(cat) != len(list) {
		t.Fatalf("got %d entries, want %d", len(cat), len(list))
	}
	for i, info := range list {
		want := schema.Procedure{Name: info.Name, Doc: info.Doc, ReadOnly: info.ReadOnly, Multi: info.Multi,
			Args: schema.Of(info.Args), Result: schema.Of(info.Result), Version: info.Version, Origin: OriginBinary}
		if !reflect.DeepEqual(cat[i], want) {
			t.Errorf("#%d: got %+v, want %+v", i, cat[i], want)
		}
		if cat[i].Doc == "" || cat[i].Args.Kind == "" || cat[i].Result.Kind == "" {
			t.Errorf("#%d: %s: incomplete entry %+v", i, info.Name, cat[i])
		}
	}
}
