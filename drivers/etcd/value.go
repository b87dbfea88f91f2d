package etcd

import (
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/driver"
)

// A lock key's value names its holder, one field a line:
//
//	owner \n acquired (Unix ms, the acquiring client's clock) \n pid \n host
//
// Owners never contain '\n' (the driver refuses them), and the acquired
// time is never empty, so a value is held by owner exactly when it sorts
// strictly between owner+"\n" and owner+"\x0b" ('\n' + 1): those two
// comparisons are the owner guard of every Txn, and etcd evaluates them on
// the server, atomically with the Txn's writes.
//
// Every acquisition creates the lock key (a hand-off too: the waiter takes
// the key its holder deleted), so its fencing token is the key's create
// revision.
//
// A queue key's value is owner \n pid \n host, for people reading the queue
// with etcdctl; the driver does not read it.

// holderInfo is the end of every value a Driver writes: "\n" pid "\n" host.
func holderInfo() string {
	host, _ := os.Hostname() // an unknown host is recorded as ""
	return "\n" + strconv.Itoa(os.Getpid()) + "\n" + strings.ReplaceAll(host, "\n", " ")
}

// lockValue returns the value of a lock taken now by owner.
func (d *Driver) lockValue(owner string) string {
	return owner + "\n" + strconv.FormatInt(time.Now().UnixMilli(), 10) + d.holder
}

// queueValue returns the value of owner's queue key.
func (d *Driver) queueValue(owner string) string { return owner + d.holder }

// heldBy is the owner guard: key exists and its value names owner.
func heldBy(key, owner string) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.Value(key), ">", owner+"\n"),
		clientv3.Compare(clientv3.Value(key), "<", owner+"\x0b"),
	}
}

// ownedBy reports whether a lock key's value names owner.
func ownedBy(kv *mvccpb.KeyValue, owner string) bool {
	return kv != nil && strings.HasPrefix(string(kv.Value), owner+"\n")
}

// parseHolder decodes a lock key into what Inspect reports, except
// ExpiresAt, which is the lease's. Fields that do not parse are unknown.
func parseHolder(kv *mvccpb.KeyValue) driver.Holder {
	fields := strings.SplitN(string(kv.Value), "\n", 4)
	fields = append(fields, make([]string, 4-len(fields))...)
	h := driver.Holder{Owner: fields[0], Token: uint64(kv.CreateRevision), Host: fields[3]}
	if ms, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
		h.AcquiredAt = time.UnixMilli(ms)
	}
	h.PID, _ = strconv.Atoi(fields[2])
	return h
}
