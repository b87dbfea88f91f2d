package load

import (
	"strings"
	"testing"
)

func TestDirLoadsTheSpecAndItsContract(t *testing.T) {
	s, err := Dir("../../../spec")
	if err != nil {
		t.Fatal(err)
	}
	if s.API.Name != "spec" || s.Contract.Name != "driver" || len(s.API.Syntax) == 0 || s.Contract.TypesInfo == nil {
		t.Errorf("loaded %q and %q without syntax or types", s.API.Name, s.Contract.Name)
	}
}

func TestDirFailsLoudly(t *testing.T) {
	if _, err := Dir(t.TempDir() + "/nowhere"); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Dir(missing) = %v", err)
	}
	if _, err := Dir(t.TempDir()); err == nil {
		t.Error("Dir(empty directory) succeeded")
	}
}
