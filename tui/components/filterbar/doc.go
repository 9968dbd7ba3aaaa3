// Package filterbar is the "/" display-filter bar and the "s" text-search
// bar: live validation of the expression as it is typed (the failing part
// underlined), completion of field names with tab, and the list of
// candidates.
package filterbar
