package pgwire

import "github.com/wiretap-dev/wiretap/decode"

// The dissectors of PostgreSQL units carry no state: a store may keep the
// units on disk and rebuild them (decode.RegisterDissect).
func init() {
	decode.RegisterDissect(dissectTyped, dissectTypedRedacted, dissectUntyped, dissectAnswer, dissectEncrypted, dissectReplication)
}
