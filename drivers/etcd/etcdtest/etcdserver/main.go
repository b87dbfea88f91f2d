// Command etcdserver is the etcd server, v3.7.3, built from the module
// proxy for the etcd driver's tests: the same version as the client the
// driver uses, with no etcd binary to install. It is etcd's own main
// (etcdmain.Main) and takes etcd's flags.
//
// It is a module of its own so that the driver's module, and every program
// that imports the driver, does not depend on the etcd server.
// etcdtest.Binary builds it on first use and caches the binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
