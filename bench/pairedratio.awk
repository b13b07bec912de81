# Pairs the rounds of `make bench-compare`: the k-th result of a benchmark
# in the base file (the first) with its k-th in the head file, which ran
# right after it. Each pair's head/base ratio cancels what the machine's
# load did to both; it prints, per benchmark, the median ratio, its spread
# (min-max) and how many rounds, then each side's median. It compares the
# process's CPU time per call (cpu-ns/op) where both sides report it, and
# the wall time (ns/op) otherwise, and says which.
function cpu(    i) {
	for (i = 4; i <= NF; i++) if ($i == "cpu-ns/op") return $(i - 1)
	return ""
}
FNR == NR { k = ++nbase[$1]; bwall[$1, k] = $3; bcpu[$1, k] = cpu(); next }
{
	k = ++nhead[$1]
	if (!(($1, k) in bwall)) next
	b = bwall[$1, k]; h = $3; c = cpu()
	unit = "ns/op"
	if (bcpu[$1, k] != "" && c != "") { b = bcpu[$1, k]; h = c; unit = "cpu-ns/op" }
	if (b == 0) next
	if (!($1 in seen)) { seen[$1] = 1; order[++names] = $1 }
	n = ++count[$1]
	ratio[$1, n] = h / b
	headv[$1, n] = h
	basev[$1, n] = b
	units[$1] = (units[$1] == "" || units[$1] == unit) ? unit : "mixed"
}
function median(a, name, n,    i, j, v, s) {
	for (i = 1; i <= n; i++) s[i] = a[name, i]
	for (i = 2; i <= n; i++) {
		v = s[i]
		for (j = i - 1; j >= 1 && s[j] > v; j--) s[j + 1] = s[j]
		s[j + 1] = v
	}
	lo = s[1]; hi = s[n]
	return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
}
END {
	printf "%-48s %8s %15s %6s %12s %12s %s\n", "paired rounds (head/base)", "median", "spread", "rounds", "base", "head", "unit"
	for (i = 1; i <= names; i++) {
		name = order[i]; n = count[name]
		m = median(ratio, name, n); rlo = lo; rhi = hi
		printf "%-48s %8.3f %7.3f-%-7.3f %6d %12.0f %12.0f %s\n", name, m, rlo, rhi, n, median(basev, name, n), median(headv, name, n), units[name]
	}
}
