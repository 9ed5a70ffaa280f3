/**
 * @generated SignedSource<<10e29421945f33f2794524292d816809>>
 * @lightSyntaxTransform
 */

/* eslint-disable */

'use strict';

var node = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "instanceId"
  },
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "photo"
  }
],
v1 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "instanceId",
        "variableName": "instanceId"
      },
      {
        "kind": "Variable",
        "name": "photo",
        "variableName": "photo"
      }
    ],
    "concreteType": "Verification",
    "kind": "LinkedField",
    "name": "submitPhoto",
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
        "name": "status",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "method",
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
    "name": "RelayFlowSubmitPhotoMutation",
    "selections": (v1/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "RelayFlowSubmitPhotoMutation",
    "selections": (v1/*:: as any*/)
  },
  "params": {
    "cacheID": "e0c55671fde2df3766319c6e3c3c8f31",
    "id": null,
    "metadata": {},
    "name": "RelayFlowSubmitPhotoMutation",
    "operationKind": "mutation",
    "text": "mutation RelayFlowSubmitPhotoMutation(\n  $instanceId: ID!\n  $photo: Upload!\n) {\n  submitPhoto(instanceId: $instanceId, photo: $photo) {\n    id\n    status\n    method\n  }\n}\n"
  }
};
})();

node.hash = "e2caf6baa7bc356a3d59f377bd407260";

module.exports = node;
