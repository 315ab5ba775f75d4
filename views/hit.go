package views

// Mouse hit-testing for the list views, from the same layout arithmetic the views draw with:
// each returns the index of the row at body line y, or -1.

// listHit is the row at body line y of a list with a title and a column header line above
// rows rows starting at index offset, of n.
func listHit(y, offset, rows, n int) int {
	if y < 2 || y-2 >= rows {
		return -1
	}
	if i := offset + y - 2; i < n {
		return i
	}
	return -1
}

// ProcessesHit is the row of Processes at body line y.
func ProcessesHit(o ProcOptions, n, y int) int { return listHit(y, o.Offset, o.Height-2, n) }

// CrashesHit is the crash group at body line y of the list (not the detail).
func CrashesHit(o CrashOptions, n, y int) int {
	if o.Detail {
		return -1
	}
	h := o.Height - 2
	return listHit(y, window(clampI(o.Cursor, n), 0, h, n), h, n)
}

// threadsListH is the height of the Threads list above its detail pane.
func threadsListH(height int) int { return height - min(12, height/2) }

// ThreadsHit is the thread at body line y of the Threads list.
func ThreadsHit(o ThreadOptions, n, y int) int {
	if o.Detail {
		return -1
	}
	h := threadsListH(o.Height) - 2
	return listHit(y, window(clampI(o.Cursor, n), 0, h, n), h, n)
}

// stacksListH is the height of the Stacks tree above its pane.
func stacksListH(height int, detail bool) int {
	if detail {
		return height - min(14, height/2)
	}
	return height - min(10, height/3)
}

// StacksHit is the tree line at body line y of the Stacks tab.
func StacksHit(o StacksOptions, n, y int) int {
	h := stacksListH(o.Height, o.Detail != nil) - 2
	return listHit(y, window(clampI(o.Cursor, n), 0, h, n), h, n)
}
