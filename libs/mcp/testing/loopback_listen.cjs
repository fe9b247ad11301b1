// Preloaded (node -r) into MCP servers started by the integration tests: a
// server that listens on a bare port binds 127.0.0.1 instead of every
// interface, and announces the port it got on stderr, so tests can pass
// PORT=0 and never race for a free port.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  if (isPort && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && first.host === undefined && first.path === undefined) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  this.once('listening', () => {
    const address = this.address();
    process.stderr.write(`omniforge-test-listening ${address.address} ${address.port}\n`);
  });
  return listen.apply(this, args);
};
