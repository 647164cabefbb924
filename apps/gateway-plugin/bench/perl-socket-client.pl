#!/usr/bin/perl
# A prototype, measured by socket-exec.bench.ts only and not shipped: how fast a client of
# `berth serve` can be when it is not Node. Perl is in every Debian and Ubuntu base system
# (perl-base is essential), and this uses only what perl-base has: one JSON line out, one in.
# Its reading of the answer relies on the server's field order and would be fooled by output that
# spells a later field's name; a shipped client would need a real JSON parser.
# Usage: perl-socket-client.pl SOCKET SESSION_KEY COMMAND
use strict;
use warnings;
use IO::Socket::UNIX;

my ($path, $key, $command) = @ARGV;
sub quote {
  my $s = shift;
  $s =~ s/(["\\])/\\$1/g;
  $s =~ s/([\x00-\x1f])/sprintf('\\u%04x', ord($1))/ge;
  return "\"$s\"";
}
my $socket = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $path) or die "berth: cannot connect to $path: $!\n";
print $socket '{"v":1,"sessionKey":' . quote($key) . ',"command":' . quote($command) . "}\n";
my $line = <$socket>;
die "berth: the server closed the connection without answering\n" unless defined $line;
my %escape = ('"' => '"', '\\' => '\\', '/' => '/', b => "\b", f => "\f", n => "\n", r => "\r", t => "\t");
sub field {
  my $name = shift;
  return $1 if $line =~ /"$name":(-?\d+|true|false)/;
  return undef unless $line =~ /"$name":"((?:[^"\\]|\\.)*)"/;
  my $s = $1;
  $s =~ s/\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})/chr(0x10000 + ((hex($1) - 0xd800) << 10) + (hex($2) - 0xdc00))/gie;
  $s =~ s/\\(?:u([0-9a-f]{4})|(.))/defined $1 ? chr(hex($1)) : $escape{$2}/gie;
  return $s;
}
if ($line =~ /"error":\{/) { print STDERR 'berth: ' . field('message') . "\n"; exit 125; }
binmode STDOUT, ':utf8';
binmode STDERR, ':utf8';
utf8::decode($line);
print STDOUT field('stdout');
print STDERR field('stderr');
exit(field('timedOut') eq 'true' ? 124 : field('exitCode'));
