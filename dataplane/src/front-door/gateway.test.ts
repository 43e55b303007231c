import { expect } from 'chai';
import { AddressingError, decodeSegments, resolveGateway } from './gateway.js';

describe('gateway addressing', () => {
  it('takes the authkind from the first host label and the dataset from the path', () => {
    expect(resolveGateway('iam.data.example.com', '/demo/demo.Person/p1', undefined)).to.deep.equal({
      authkind: 'iam', by: 'host', datasetId: 'demo', rest: ['demo.Person', 'p1'], datasetFrom: 'path',
    });
    expect(resolveGateway('public.localhost:8080', '/demo', undefined)).to.include({ authkind: 'public', datasetId: 'demo' });
  });
  it('takes the dataset from a host label in front of the gateway label', () => {
    expect(resolveGateway('demo.iam.example.com', '/', undefined)).to.deep.equal({ authkind: 'iam', by: 'host', datasetId: 'demo', rest: [], datasetFrom: 'host' });
    expect(resolveGateway('demo.public.example.com', '/demo.Person/p1', undefined).rest).to.deep.equal(['demo.Person', 'p1']);
    expect(resolveGateway('demo.iam.example.com', '/demo/echo', undefined).rest).to.deep.equal(['echo']);
  });
  it('infers the gateway from the Authorization scheme on a host without a gateway label', () => {
    expect(resolveGateway('internal-lb.elb.amazonaws.com', '/demo', 'Proxy demo-admin')).to.include({ authkind: 'iam', by: 'scheme' });
    expect(resolveGateway('10.0.0.7', '/demo', 'Bearer x')).to.include({ authkind: 'public', by: 'scheme' });
    expect(resolveGateway(undefined, '/demo', undefined)).to.include({ authkind: 'public', by: 'scheme' });
  });
  it('decodes path segments and rejects broken percent-encoding', () => {
    expect(resolveGateway('iam.x', '/demo/demo.Person/a%20b', undefined).rest).to.deep.equal(['demo.Person', 'a b']);
    expect(() => resolveGateway('iam.x', '/demo/%E0%A4%A', undefined)).to.throw(AddressingError);
    expect(() => resolveGateway('iam.x', '/demo/demo.Person/a%00b', undefined)).to.throw(AddressingError, /NUL/);
  });
  it('answers a repeated Host the same way (remembered labels), and a different Host on its own terms', () => {
    for (let i = 0; i < 3; i++) {
      expect(resolveGateway('demo.iam.example.com', '/echo', undefined)).to.include({ authkind: 'iam', datasetId: 'demo', by: 'host' });
      expect(resolveGateway('Demo.IAM.example.com.', '/echo', undefined)).to.include({ authkind: 'iam', datasetId: 'demo', by: 'host' });
      expect(resolveGateway('sealed.public.example.com', '/echo', undefined)).to.include({ authkind: 'public', datasetId: 'sealed' });
    }
    for (let i = 0; i < 600; i++) resolveGateway(`d${i}.iam.example.com`, '/', undefined); // past the bound: cleared, still right
    expect(resolveGateway('demo.iam.example.com', '/', undefined)).to.include({ datasetId: 'demo' });
    expect(resolveGateway('d599.iam.example.com', '/', undefined)).to.include({ datasetId: 'd599' });
  });
  it('keeps empty segments out and decodes only encoded ones', () => {
    expect(decodeSegments('//demo///demo.Person/a%2Fb/')).to.deep.equal(['demo', 'demo.Person', 'a/b']);
  });
});
