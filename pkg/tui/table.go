package tui

import (
	"cmp"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// column describes one column of a table.
type column struct {
	title string
	// max caps the column's width; 0 means no cap. A flex column takes the
	// room the others leave.
	max  int
	flex bool
	// right aligns numbers.
	right bool
	// numeric columns sort by row.nums.
	numeric bool
	// drop is the order in which columns are left out when the terminal is
	// too narrow (1 first); 0 never.
	drop int
	// hidden columns are not shown (e.g. the scheduler's message offline).
	hidden bool
}

// row is one line of a table.
type row struct {
	key   string // identity kept across refreshes (cursor, selection)
	cells []string
	nums  []float64
	// ref indexes the report slice the row was made from.
	ref int
	// match is the lower-cased text the filter searches.
	match string
}

// table is a sortable, filterable list with a cursor. Rows are prepared
// once per report; a key press only moves indices, so it stays cheap with
// tens of thousands of rows.
type table struct {
	cols    []column
	rows    []row
	visible []int // indices into rows after filter and sort
	cursor  int   // index into visible
	offset  int   // first visible row shown
	sortCol int   // -1: report order
	desc    bool
	filter  string
	natural []int // widest cell per column, over all rows
}

func newTable(cols []column) *table {
	return &table{cols: cols, sortCol: -1}
}

// setRows replaces the rows, keeping the cursor on the row with the same key.
func (t *table) setRows(rows []row) {
	var current string
	if r := t.current(); r != nil {
		current = r.key
	}
	t.rows = rows
	t.natural = make([]int, len(t.cols))
	for i, c := range t.cols {
		t.natural[i] = ansi.StringWidth(c.title) + 1 // room for the sort arrow
	}
	for i := range rows {
		for c, cell := range rows[i].cells {
			if w := ansi.StringWidth(cell); w > t.natural[c] {
				t.natural[c] = w
			}
		}
		if rows[i].match == "" {
			rows[i].match = strings.ToLower(strings.Join(rows[i].cells, " "))
		}
	}
	t.refresh()
	if current != "" {
		for vi, ri := range t.visible {
			if t.rows[ri].key == current {
				t.cursor = vi
				break
			}
		}
	}
	t.clamp()
}

// refresh re-applies the filter and the sort.
func (t *table) refresh() {
	t.visible = t.visible[:0]
	f := strings.ToLower(t.filter)
	for i := range t.rows {
		if f == "" || strings.Contains(t.rows[i].match, f) {
			t.visible = append(t.visible, i)
		}
	}
	if t.sortCol >= 0 && t.sortCol < len(t.cols) {
		c, numeric := t.sortCol, t.cols[t.sortCol].numeric
		slices.SortStableFunc(t.visible, func(a, b int) int {
			ra, rb := &t.rows[a], &t.rows[b]
			// "-" is none (no price, no node): last in either order,
			// so that the rows that have the value lead.
			if noneA, noneB := ra.cells[c] == "-", rb.cells[c] == "-"; noneA != noneB {
				if noneA {
					return 1
				}
				return -1
			}
			var d int
			if numeric && c < len(ra.nums) && c < len(rb.nums) {
				d = cmp.Compare(ra.nums[c], rb.nums[c])
			} else {
				d = strings.Compare(ra.cells[c], rb.cells[c])
			}
			if t.desc {
				d = -d
			}
			return d
		})
	}
	t.clamp()
}

func (t *table) clamp() {
	if t.cursor >= len(t.visible) {
		t.cursor = len(t.visible) - 1
	}
	if t.cursor < 0 {
		t.cursor = 0
	}
}

// current returns the row under the cursor, or nil.
func (t *table) current() *row {
	if t.cursor < 0 || t.cursor >= len(t.visible) {
		return nil
	}
	return &t.rows[t.visible[t.cursor]]
}

func (t *table) move(d int) {
	t.cursor += d
	t.clamp()
}

func (t *table) top()    { t.cursor = 0 }
func (t *table) bottom() { t.cursor = len(t.visible) - 1; t.clamp() }

// setFilter filters rows on a case-insensitive substring.
func (t *table) setFilter(f string) {
	if f == t.filter {
		return
	}
	t.filter = f
	t.cursor, t.offset = 0, 0
	t.refresh()
}

// cycleSort moves the sort to the next column (after the last: report order).
func (t *table) cycleSort() {
	t.sortCol++
	if t.sortCol >= len(t.cols) {
		t.sortCol = -1
	}
	t.desc = t.sortCol >= 0 && t.cols[t.sortCol].numeric // biggest first
	t.refresh()
}

// sortBy sorts on column c, or reverses the order when it already does.
func (t *table) sortBy(c int) {
	if c < 0 || c >= len(t.cols) {
		return
	}
	if t.sortCol == c {
		t.desc = !t.desc
	} else {
		t.sortCol, t.desc = c, t.cols[c].numeric
	}
	t.refresh()
}

// reverse flips the sort order.
func (t *table) reverse() {
	if t.sortCol < 0 {
		t.sortCol = 0
	}
	t.desc = !t.desc
	t.refresh()
}

// layout decides which columns are shown and how wide, for a width.
func (t *table) layout(width int) (shown []int, widths []int) {
	const gap = 2
	prefix := 2 // cursor and selection marks
	cols := make([]int, 0, len(t.cols))
	for i := range t.cols {
		if !t.cols[i].hidden {
			cols = append(cols, i)
		}
	}
	want := func(i int) int {
		w := t.natural[i]
		if m := t.cols[i].max; m > 0 && w > m {
			w = m
		}
		return w
	}
	minFlex := func(i int) int { return min(want(i), max(ansi.StringWidth(t.cols[i].title)+1, 12)) }
	total := func(cols []int) int {
		s := prefix
		for k, i := range cols {
			if k > 0 {
				s += gap
			}
			if t.cols[i].flex {
				s += minFlex(i)
			} else {
				s += want(i)
			}
		}
		return s
	}
	for total(cols) > width {
		drop, at := 0, -1
		for k, i := range cols {
			if d := t.cols[i].drop; d > 0 && (at < 0 || d < drop) {
				drop, at = d, k
			}
		}
		if at < 0 {
			break
		}
		cols = slices.Delete(cols, at, at+1)
	}
	widths = make([]int, len(cols))
	used := prefix
	var flex []int
	for k, i := range cols {
		if k > 0 {
			used += gap
		}
		if t.cols[i].flex {
			flex = append(flex, k)
			continue
		}
		widths[k] = want(i)
		used += widths[k]
	}
	t.shareFlex(cols, widths, flex, width-used)
	return cols, widths
}

// shareFlex shares room between the flex columns (flex indexes cols and
// widths), none wider than it needs; the others share what is left.
func (t *table) shareFlex(cols, widths, flex []int, room int) {
	left := flex
	for len(left) > 0 {
		share := max(room/len(left), 1)
		var next []int
		for _, k := range left {
			if n := t.natural[cols[k]]; n <= share {
				widths[k] = n
				room -= n
			} else {
				next = append(next, k)
			}
		}
		if len(next) == len(left) {
			for j, k := range next {
				widths[k] = max(room/len(next), 1)
				if j == len(next)-1 {
					widths[k] = max(room-(len(next)-1)*(room/len(next)), 1)
				}
			}
			return
		}
		left = next
	}
}

// render draws the header line and up to height rows at width.
func (t *table) render(width, height int, st *styles, mark func(*row) string) []string {
	cols, widths := t.layout(width)
	lines := make([]string, 0, height+1)
	var hb strings.Builder
	hb.WriteString("  ")
	for k, i := range cols {
		if k > 0 {
			hb.WriteString("  ")
		}
		title := t.cols[i].title
		if t.sortCol == i {
			if t.desc {
				title += "↓"
			} else {
				title += "↑"
			}
		}
		hb.WriteString(pad(title, widths[k], t.cols[i].right))
	}
	lines = append(lines, st.header.Render(ansi.Truncate(hb.String(), width, "")))
	if height < 1 {
		return lines
	}
	// Keep the cursor in view.
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+height {
		t.offset = t.cursor - height + 1
	}
	if t.offset > max(len(t.visible)-height, 0) {
		t.offset = max(len(t.visible)-height, 0)
	}
	end := min(t.offset+height, len(t.visible))
	for vi := t.offset; vi < end; vi++ {
		r := &t.rows[t.visible[vi]]
		var b strings.Builder
		m := " "
		if mark != nil {
			m = mark(r)
		}
		if vi == t.cursor {
			b.WriteString(">")
		} else {
			b.WriteString(" ")
		}
		b.WriteString(m)
		for k, i := range cols {
			if k > 0 {
				b.WriteString("  ")
			}
			b.WriteString(pad(r.cells[i], widths[k], t.cols[i].right))
		}
		line := ansi.Truncate(b.String(), width, "")
		if vi == t.cursor {
			line = st.cursor.Render(pad(line, width, false))
		}
		lines = append(lines, line)
	}
	return lines
}

// pad truncates or pads s to exactly w cells.
func pad(s string, w int, right bool) string {
	n := ansi.StringWidth(s)
	if n > w {
		if w <= 1 {
			return ansi.Truncate(s, w, "")
		}
		return ansi.Truncate(s, w, "…")
	}
	if right {
		return strings.Repeat(" ", w-n) + s
	}
	return s + strings.Repeat(" ", w-n)
}
