#!/usr/bin/env bash
# Import-direction check (docs/architecture.md): main -> commands -> suites and runtime -> report
# and input; error, progress and shard are utilities below all of them. A module may use its own
# layer and the layers below it, never one above. Reads every `crate::...` path in src/ (grouped
# `use crate::{a, b::c}` included, comments skipped) and prints each import that runs upwards as
# file:line; exits 1 when there is one.
#
#   scripts/check-layers.sh          # check src/
#   scripts/check-layers.sh DIR      # check another copy of src/ (the self-test uses this)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=${1:-src}

perl -e '
use strict;
use warnings;
my $src = shift;
# Top-level modules a module may not name, by the module it lives in.
my @above_runtime = qw(cli commands);
my @above_report  = (@above_runtime, qw(suites runtime));
my @above_utils   = (@above_report, qw(report input));
my %forbidden = (
    runtime  => [@above_runtime],
    suites   => [@above_runtime],
    report   => [@above_report],
    input    => [@above_report],
    error    => [@above_utils],
    progress => [@above_utils],
    shard    => [@above_utils],
);
my $bad = 0;
for my $file (sort split /\n/, `find $src -name "*.rs"`) {
    my ($top) = $file =~ m{^\Q$src\E/([a-z_]+)};
    next unless defined $top && exists $forbidden{$top};
    my %no = map { $_ => 1 } @{ $forbidden{$top} };
    open my $fh, "<", $file or die "$file: $!";
    my $text = do { local $/; <$fh> };
    close $fh;
    # Blank out comments, keeping line numbers.
    $text =~ s{//[^\n]*}{}g;
    $text =~ s{/\*.*?\*/}{ my $c = $&; $c =~ tr/\n//cd; $c }gse;
    while ($text =~ m{\bcrate\s*::\s*(\{(?:[^{}]|\{[^{}]*\})*\}|[a-z_]+)}g) {
        my ($what, $at) = ($1, $-[0]);
        # `{a::{x, y}, b}`: the first name of each top-level item (a, b).
        (my $flat = $what) =~ s/^\{//;
        $flat =~ s/\{[^{}]*\}//g;
        my @names = $what =~ /^\{/ ? ($flat =~ m{(?:^|,)\s*([a-z_]+)}g) : ($what);
        for my $name (@names) {
            next unless $no{$name};
            my $line = 1 + (substr($text, 0, $at) =~ tr/\n//);
            print "$file:$line: $top/ imports crate::$name (a higher layer)\n";
            $bad = 1;
        }
    }
}
exit $bad;
' "$SRC" && echo "layers OK: no import from a lower layer to a higher one"
