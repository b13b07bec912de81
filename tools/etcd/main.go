// Command etcd is the upstream etcd server, built from go.etcd.io/etcd so the
// e2e tests and the sandbox need no prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
