#!/usr/bin/perl
# The fast client of `berth serve`, for hosts that spawn a process per command (OpenClaw's
# sandbox backends do). It does what `berth exec --socket` does, in a Perl that starts in a few
# milliseconds where Node takes tens: sends one request, writes the command's stdout and stderr
# to its own, exits with its status (124 after a timeout, 125 when Berth fails, one line on
# stderr). Only what perl-base has (Socket), which every Debian and Ubuntu system carries.
#
# It is spawned by the argv that sandboxCommandArgv builds, not typed by people:
#   berth-socket-client.pl --socket=/abs/path [--timeout=S] [--stdin] --request-file=/abs/path
# The request file holds the JSON object that `berth serve` reads, made by the host's own JSON
# encoder and asking for a framed reply; it is private (mode 0600, this user's), read once and
# deleted here, and never in the argv, which every local user can read in /proc/<pid>/cmdline.
# With --stdin this process's input is added as the request's `stdin`.
use strict;
use warnings;
use Fcntl qw(O_RDONLY O_NOFOLLOW O_DIRECTORY);
use Socket qw(PF_UNIX SOCK_STREAM pack_sockaddr_un);

# The socket's wire contract (integrations/hermes/berth_hermes/request_protocol.json, written from
# TypeScript): protocolVersion, maxRequestBytes, timeoutExitCode and berthFailureExitCode. Named
# here, since perl-base has no JSON module and the file is not shipped with this client;
# request-protocol-file.test.ts checks them, the field added to a request and the answers read
# below against that file.
my $PROTOCOL_VERSION = 1;
my $MAX_REQUEST_BYTES = 1024 * 1024;
my $BERTH_ERROR_EXIT = 125;
# Linux's sun_path (MAX_SOCKET_PATH_BYTES in apps/gateway-plugin/src/socket/protocol.ts): a longer
# socket path is reached through a descriptor of its folder, as berth serve binds it.
my $MAX_SOCKET_PATH_BYTES = 107;

sub fail {
  my ($message) = @_;
  $message =~ s/\s*[\r\n]+\s*/ /g;
  $message =~ s/\A\s+|\s+\z//g;
  print STDERR "berth: $message\n";
  exit $BERTH_ERROR_EXIT;
}

my ($path, $request_file, $timeout, $forward_stdin);
for my $word (@ARGV) {
  if ($word =~ /\A--socket=(\/.*)\z/s) { $path = $1 }
  elsif ($word =~ /\A--request-file=(\/.*)\z/s) { $request_file = $1 }
  elsif ($word =~ /\A--timeout=([0-9]+(?:\.[0-9]+)?)\z/) { $timeout = $1 }
  elsif ($word eq '--stdin') { $forward_stdin = 1 }
  else { fail('berth-socket-client.pl: unexpected argument; it takes --socket=ABSOLUTE_PATH [--timeout=S] [--stdin] --request-file=ABSOLUTE_PATH, as sandboxCommandArgv builds them') }
}
fail('berth-socket-client.pl: --socket=ABSOLUTE_PATH and --request-file=ABSOLUTE_PATH are required, as sandboxCommandArgv builds them') unless defined $path && defined $request_file;

# The request: a private file of this user's, read once and deleted before anything else.
my $request;
{
  sysopen(my $file, $request_file, O_RDONLY | O_NOFOLLOW)
    or fail($!{ENOENT} ? "the request file $request_file is gone (a request is read once); the host must build a new argv for each command" : "cannot open the request file $request_file ($!)");
  my @file = stat $file;
  fail("the request file $request_file is not a private file of this user's; refusing it") unless -f _ && $file[4] == $< && ($file[2] & 077) == 0;
  fail("the request file $request_file is larger than $MAX_REQUEST_BYTES bytes") if $file[7] > $MAX_REQUEST_BYTES;
  $request = '';
  while (1) {
    my $read = sysread($file, $request, 65536, length $request);
    fail("cannot read the request file $request_file ($!)") unless defined $read;
    last if $read == 0;
  }
  close $file;
  unlink $request_file;
  fail("the request file $request_file does not hold a JSON request; build the argv with sandboxCommandArgv") unless $request =~ /\A\{.*\}\z/s;
}

# A JSON string of raw bytes: quotes, backslashes and control characters escaped, the rest as
# sent (the server reads the line as UTF-8, as it reads the Node client's).
sub json_string {
  my ($text) = @_;
  $text =~ s/(["\\])/\\$1/g;
  $text =~ s/([\x00-\x1f])/sprintf('\\u%04x', ord $1)/ge;
  return "\"$text\"";
}

if ($forward_stdin) {
  binmode STDIN;
  my $input = '';
  # One byte over the bound is enough to refuse the request with a clear message.
  while (length($input) <= $MAX_REQUEST_BYTES) {
    my $read = sysread(STDIN, $input, 65536, length $input);
    fail("cannot read this process's input ($!)") unless defined $read;
    last if $read == 0;
  }
  $request =~ s/\}\z/,"stdin":@{[json_string($input)]}}/;
}
fail("the request is larger than $MAX_REQUEST_BYTES bytes; send less input with it") if length($request) > $MAX_REQUEST_BYTES;

# The socket must be ours: another user's socket at the path could be a stand-in that collects
# every command and its input.
my $start = "start the server with \"berth serve --socket $path\"";
my @stat = lstat $path;
unless (@stat) {
  fail("no berth server at $path: the socket does not exist; $start") if $!{ENOENT};
  fail("cannot reach $path: permission denied; run as the user that started berth serve") if $!{EACCES};
  fail("cannot inspect $path ($!); $start");
}
fail("$path is not a socket; $start") unless -S _;
fail("$path belongs to uid $stat[4], not to you (uid $<); refusing to send a command to another user's server") if $stat[4] != $<;

my $address = $path;
my $folder;
if (length($path) > $MAX_SOCKET_PATH_BYTES) {
  my ($parent, $name) = $path =~ m{\A(.*)/([^/]+)\z}s;
  sysopen($folder, $parent eq '' ? '/' : $parent, O_RDONLY | O_DIRECTORY) or fail("cannot inspect $path ($!); $start");
  $address = '/proc/self/fd/' . fileno($folder) . "/$name";
}
socket(my $connection, PF_UNIX, SOCK_STREAM, 0) or fail("cannot make a socket ($!)");
unless (connect($connection, pack_sockaddr_un($address))) {
  fail("nothing listens on $path (a socket left by a stopped server); start the server with \"berth serve --socket $path\"") if $!{ECONNREFUSED};
  fail("cannot connect to $path: permission denied; run as the user that started berth serve") if $!{EACCES};
  fail("the connection to $path failed ($!); check that berth serve is running");
}
# A server that answers (a refusal) before reading the whole request closes early: that answer counts.
local $SIG{PIPE} = 'IGNORE';
my $line = "$request\n";
my $offset = 0;
while ($offset < length $line) {
  my $written = syswrite($connection, $line, length($line) - $offset, $offset);
  last unless defined $written;
  $offset += $written;
}

my $answer = '';
while (1) {
  my $read = sysread($connection, $answer, 65536, length $answer);
  last if !defined $read && length $answer > 0;
  fail("the connection to $path failed ($!); check that berth serve is running") unless defined $read;
  last if $read == 0;
}
close $connection;

if ($answer =~ /\ABERTH1 ([0-9]{1,3}) ([01]) ([01]) ([0-9]+) ([0-9]+)\n/) {
  my ($status, $timed_out, $out_bytes, $err_bytes) = ($1, $2, $4, $5);
  my $body = $+[0];
  fail("the server on $path answered a cut or padded result; is it berth serve?") if length($answer) != $body + $out_bytes + $err_bytes;
  binmode STDOUT;
  binmode STDERR;
  syswrite(STDOUT, $answer, $out_bytes, $body) if $out_bytes > 0;
  syswrite(STDERR, $answer, $err_bytes, $body + $out_bytes) if $err_bytes > 0;
  # The status is the result's, 124 after a timeout included (the runtime decides it once).
  print STDERR 'berth: the command was killed at its timeout' . (defined $timeout ? " of $timeout s" : '') . "\n" if $timed_out;
  exit($status <= 255 ? $status : 1);
}

# A refusal is one JSON line, {"v":$PROTOCOL_VERSION,"error":{"code":"…","message":"…"}}, as JSON.stringify writes it.
fail("the berth server on $path closed the connection without answering; see its log") unless $answer =~ /\n/;
fail("the server on $path answered something that is neither a framed result nor a refusal; is it berth serve of this release?")
  unless $answer =~ /\A\{"v":$PROTOCOL_VERSION,"error":\{"code":"[A-Za-z0-9_]+","message":"((?:[^"\\]|\\.)*)"\}\}\n/s;
my $message = $1;
utf8::decode($message);
my %escaped = ('"' => '"', '\\' => '\\', '/' => '/', b => "\b", f => "\f", n => "\n", r => "\r", t => "\t");
$message =~ s/\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})/chr(0x10000 + ((hex($1) - 0xd800) << 10) + (hex($2) - 0xdc00))/gie;
$message =~ s{\\(?:u([0-9a-fA-F]{4})|(.))}{defined $1 ? chr(hex $1) : ($escaped{$2} // $2)}ges;
utf8::encode($message);
fail($message);
