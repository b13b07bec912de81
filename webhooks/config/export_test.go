package config

import "reflect"

// DocKeys are the keys, as schemaDocs has them, of every type and field
// whose doc comment Schema looks up, describing rules' sections.
func DocKeys(rules Sections) map[string]bool {
	looked := map[string]bool{}
	schemaReflector{rules: rules, descriptions: schemaDocs, looked: looked}.schema(reflect.TypeFor[Config]())
	return looked
}
