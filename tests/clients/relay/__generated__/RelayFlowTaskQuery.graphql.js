/**
 * @generated SignedSource<<b31af52ffa972d7d790356cb2500ca1d>>
 * @lightSyntaxTransform
 */

/* eslint-disable */

'use strict';

var node = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "id"
  }
],
v1 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "id",
        "variableName": "id"
      }
    ],
    "concreteType": "Task",
    "kind": "LinkedField",
    "name": "task",
    "plural": false,
    "selections": [
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "id",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "title",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "state",
        "storageKey": null
      }
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "RelayFlowTaskQuery",
    "selections": (v1/*:: as any*/),
    "type": "Query",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "RelayFlowTaskQuery",
    "selections": (v1/*:: as any*/)
  },
  "params": {
    "cacheID": "31654ec678f7d49bba36f4f26b1b44d3",
    "id": null,
    "metadata": {},
    "name": "RelayFlowTaskQuery",
    "operationKind": "query",
    "text": "query RelayFlowTaskQuery(\n  $id: ID!\n) {\n  task(id: $id) {\n    id\n    title\n    state\n  }\n}\n"
  }
};
})();

node.hash = "aa2f50eb8a3937e3ee38dc8d1967b94d";

export default node;
