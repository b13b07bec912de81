# Pairs the rounds of `make bench-compare`: the k-th result of a benchmark
# in the base file (the first) with its k-th in the head file, which ran
# right after it. Each pair's head/base ratio of ns/op cancels what the
# machine's load did to both; prints, per benchmark, the median ratio, its
# spread (min-max) and how many rounds, then the median ns/op of each side.
FNR == NR { base[$1, ++nbase[$1]] = $3; next }
{
	k = ++nhead[$1]
	if (!(($1, k) in base) || base[$1, k] == 0) next
	if (!($1 in seen)) { seen[$1] = 1; order[++names] = $1 }
	n = ++count[$1]
	ratio[$1, n] = $3 / base[$1, k]
	headns[$1, n] = $3
	basens[$1, n] = base[$1, k]
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
	printf "%-48s %8s %15s %6s %12s %12s\n", "paired rounds (head/base)", "median", "spread", "rounds", "base ns/op", "head ns/op"
	for (i = 1; i <= names; i++) {
		name = order[i]; n = count[name]
		m = median(ratio, name, n); rlo = lo; rhi = hi
		printf "%-48s %8.3f %7.3f-%-7.3f %6d %12.0f %12.0f\n", name, m, rlo, rhi, n, median(basens, name, n), median(headns, name, n)
	}
}
