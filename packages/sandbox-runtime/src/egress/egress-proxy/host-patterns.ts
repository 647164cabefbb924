export { canonicalHost, formatHostPattern, hostMatches, parseHostPattern, type HostPattern } from '@berth/core/driver';
