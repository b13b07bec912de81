package config

import "reflect"

// DocKeys are the keys, as schemaDocs has them, of every type and field
// whose doc comment Schema looks up.
func DocKeys() map[string]bool {
	looked := map[string]bool{}
	schemaReflector{descriptions: schemaDocs, looked: looked}.schema(reflect.TypeFor[Config]())
	return looked
}
